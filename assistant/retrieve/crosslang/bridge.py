"""The bridge, the lexical side of crosslang retrieval: a question carried into the other
language without a model, so an English question finds a Chinese policy by its words and a
Chinese question an English one.

Each content word of the question is looked up, longest phrase first, in the policy glossary,
then in CC-CEDICT (`glossary.py`); numbers and Latin-script names go across as they are. What
a word becomes weighs how surely it translates: a glossary term 1.0, a dictionary word with one
sense `SINGLE`, one of n senses `SINGLE / n`. The carried words are searched by BM25 beside the
question's own, and their ranking joins RRF (`Bridge.rank`) when a gate opens: the carried
words cover more of the question in their top passages than its own words in theirs, and its
own top passages hold less than retrieve.bilingual_held of it; the weight grows with the lead.
A question the documents answer in its own language keeps its old ranking. A question no word
of which translates has no bridge: exactly the old path.

    carry("How many days of sick leave?", "en", load_glossary()).terms -> ["病假", "天", ...]
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant.answerable import asks
from assistant.retrieve.crosslang.glossary import Dictionary, Glossary, load_glossary
from assistant.retrieve.lexical import BM25Index, BoolMask, Synonyms
from core.settings.retrieve import RetrieveSettings
from core.text import EN_STOP, IDEOGRAPH_RUN, ZH_STOP, segmenter, stem, tokenize

# How surely a word translates: the glossary's terms are reviewed; a dictionary word with one
# sense is likely right, one of several senses is right about once in that many.
GLOSSARY = 1.0
SINGLE = 0.6
# The most senses (English -> Chinese: the most frequent headwords) a dictionary word carries.
MAX_SENSES = 3
# English words that ask rather than name what is asked (they carry nothing across).
_ASKING_EN = frozenset({"mani", "much", "long", "need", "want", "know", "tell", "ask", "get",
                        "happen", "exactli", "allow", "possibl", "may", "must"})  # fmt: skip
_ASKING_ZH = re.compile(r"几|多少|什么|怎么|怎样|如何|哪|是否|吗|多久|多长|多大|可以|能否|需要")
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:'[a-z]+)?|\d+(?:\.\d+)?%?")
_LATIN_RUN = re.compile(r"[A-Za-z][A-Za-z0-9]*|\d+(?:\.\d+)?")


# --- carrying a question across -----------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One content word (or phrase) of a question: its own index terms, the terms it becomes in
    the other language (empty: it does not translate) and how surely."""

    own: tuple[str, ...]
    carried: tuple[str, ...]
    sureness: float


@dataclass(frozen=True)
class Carried:
    """A question in the other language: its BM25 terms with their weights, and its units."""

    terms: list[str]
    weight: dict[str, float]
    units: list[Unit]

    @property
    def confidence(self) -> float:
        """The mean sureness of the units that translated."""
        sure = [u.sureness for u in self.units if u.carried and u.sureness < 1.5]
        return sum(sure) / len(sure) if sure else 0.0


def carry(
    question: str,
    lang: str,
    glossary: Glossary,
    dictionary: Dictionary | None = None,
    synonyms: Synonyms | None = None,
) -> Carried | None:
    """`question` (in `lang`) carried into the other language, or None when no word of it
    translates (then nothing is searched across). A Chinese word's own terms include its
    paraphrases (`synonyms`, retrieve.synonyms), as the question's own search does."""
    if lang == "en":
        units = _english_units(question, glossary, dictionary)
    else:
        units = _chinese_units(question, glossary, dictionary, synonyms or {})
    if not any(u.carried and u.sureness < 1.5 for u in units):
        return None
    weight: dict[str, float] = {}
    for u in units:
        for term in u.carried:
            weight[term] = max(weight.get(term, 0.0), min(u.sureness, 1.0))
    return Carried(list(weight), weight, units)


# Numbers and names are carried as they are; they mark themselves (sureness above 1) so that
# they do not count as a translation.
_AS_IS = 2.0


def _english_units(
    question: str, glossary: Glossary, dictionary: Dictionary | None
) -> list[Unit]:
    text = unicodedata.normalize("NFKC", question)
    words = [(w, w.lower()) for w in _EN_WORD.findall(text)]
    kept = [(w, stem(lw)) for w, lw in words if lw not in EN_STOP and stem(lw) not in _ASKING_EN]
    stems = [s for _, s in kept]
    units: list[Unit] = []
    i = 0
    while i < len(kept):
        found = None if stems[i][0].isdigit() else _longest(stems, i, glossary.en_zh, 4)
        sure = GLOSSARY
        if found is None and dictionary is not None and not stems[i][0].isdigit():
            found = _longest(stems, i, dictionary.en_zh, 3)
            if found is not None:
                n, zh = found
                zh = zh[:MAX_SENSES]
                found, sure = (n, zh), SINGLE / len(zh)
        if found is not None:
            n, zh = found
            carried = tuple(dict.fromkeys(t for term in zh for t in tokenize(term)))
            units.append(Unit(tuple(stems[i : i + n]), carried, sure))
            i += n
            continue
        word, s = kept[i]
        as_is = word[0].isdigit() or (word[0].isupper() and i > 0) or word.isupper()
        own = tuple(tokenize(word)) or (s,)
        units.append(Unit(own, own if as_is else (), _AS_IS if as_is else 0.0))
        i += 1
    return units


def _longest(
    stems: Sequence[str], i: int, table: Mapping[tuple[str, ...], tuple[str, ...]], most: int
) -> tuple[int, tuple[str, ...]] | None:
    for n in range(min(most, len(stems) - i), 0, -1):
        hit = table.get(tuple(stems[i : i + n]))
        if hit:
            return n, hit
    return None


def _chinese_units(
    question: str, glossary: Glossary, dictionary: Dictionary | None, synonyms: Synonyms
) -> list[Unit]:
    text = unicodedata.normalize("NFKC", question)
    units = [Unit(tuple(tokenize(w)), tuple(tokenize(w)), _AS_IS) for w in _LATIN_RUN.findall(text)]
    for run in IDEOGRAPH_RUN.findall(text):
        for piece in _glossary_cut(run, glossary):
            own = tuple(t for t in tokenize(piece) if not _ASKING_ZH.search(t))
            own += _paraphrased(piece, synonyms)
            if piece in glossary.zh_en:
                units.append(Unit(own, glossary.zh_en[piece], GLOSSARY))
                continue
            for word in segmenter().cut(piece, HMM=False):
                if word in ZH_STOP or _ASKING_ZH.search(word) or len(word) < 2:
                    continue
                senses = dictionary.zh_en.get(word, ()) if dictionary else ()
                senses = senses[:MAX_SENSES]
                carried = tuple(dict.fromkeys(t for key in senses for t in key))
                sure = SINGLE / len(senses) if senses else 0.0
                own = tuple(tokenize(word)) or (word,)
                units.append(Unit(own + _paraphrased(word, synonyms), carried, sure))
    return [u for u in units if u.own]


def _paraphrased(text: str, synonyms: Synonyms) -> tuple[str, ...]:
    """The terms of the paraphrases of the words in `text`.

    _paraphrased("年假", {"年假": ["年休假"]}) -> ("休假", "年休假")
    """
    return tuple(t for word, alts in synonyms.items() if word in text for a in alts
                 for t in tokenize(a))  # fmt: skip


def _glossary_cut(run: str, glossary: Glossary) -> list[str]:
    """`run` cut into the glossary's terms (longest first) and the pieces between them.

    _glossary_cut("请病假要什么手续", load_glossary()) -> ["请", "病假", "要什么手续"]
    """
    pieces: list[str] = []
    i = start = 0
    longest = max((len(t) for t in glossary.zh_en), default=0)
    while i < len(run):
        for n in range(min(longest, len(run) - i), 1, -1):
            if run[i : i + n] in glossary.zh_en:
                if start < i:
                    pieces.append(run[start:i])
                pieces.append(run[i : i + n])
                i = start = i + n
                break
        else:
            i += 1
    if start < len(run):
        pieces.append(run[start:])
    return pieces


# --- which side covers the question -------------------------------------------------------------


def coverage(
    units: Sequence[Unit], index: BM25Index, rows: Sequence[int], carried: bool, whole: bool
) -> float:
    """The best share, over `rows`, of the question's units one row holds (by any of their
    translations with `carried`, else by their own terms: all of them with `whole`, an English
    phrase, any for Chinese), each unit weighing the idf of its own terms (a word no passage
    holds weighs what a word in one passage would).

    coverage(units, index, [3, 7], carried=True) -> 0.8
    """
    if not rows or not units:
        return 0.0
    rare = math.log1p((len(index) - 0.5) / 1.5)
    weights = [max((index.idf(t) or rare for t in u.own), default=rare) for u in units]
    held_by_row = np.zeros(len(rows), dtype=np.float64)
    for u, w in zip(units, weights, strict=True):
        if carried or not whole:
            terms = u.carried if carried else u.own
            if terms:
                held_by_row += w * (index.coverage(list(terms), rows) > 0)
        else:
            held = np.ones(len(rows), dtype=bool)
            for t in u.own:
                held &= index.coverage([t], rows) > 0
            held_by_row += w * held
    total = sum(weights)
    return float(held_by_row.max()) / total if total else 0.0


def _held_share(question: str, index: BM25Index, rows: Sequence[int]) -> float:
    """The best share, over `rows`, of the question's own indexed terms (idf-weighted, asking
    words left out) that one row holds: how well its own language's passages answer it.

    _held_share("婚假有几天？", index, [4]) -> 1.0
    """
    terms = [t for t in dict.fromkeys(tokenize(question)) if not asks(t)]
    idf = {t: index.idf(t) for t in terms}
    known = [t for t in terms if idf[t] is not None]
    total = sum(idf[t] or 0.0 for t in known)
    if not rows or not total:
        return 0.0
    held = np.zeros(len(rows), dtype=np.float64)
    for t in known:
        held += index.coverage([t], rows)
    return float(held.max()) / total


# --- the bridge -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BridgeRanking:
    """The carried question's BM25 ranking and its RRF weight, with the gate's readings."""

    ranking: list[str]
    weight: float
    gate: dict[str, float]
    terms: list[str]  # the carried question's terms, what answerability weighs when it opened


class Bridge:
    """The retriever's bridge between the languages (retrieve.bilingual): the glossary read
    at start, the dictionary on the first question that needs it (a long-running process
    reads it in its warm-up, `ui.wiring.WarmUp`; a `kb ask` whose gate stays shut, never)."""

    def __init__(self, settings: RetrieveSettings, base_dir: Path, synonyms: Synonyms) -> None:
        self.settings = settings
        self.synonyms = synonyms
        extra = str(base_dir / settings.glossary) if settings.glossary else ""
        self.glossary = load_glossary(extra)

    def rank(
        self,
        index: BM25Index,
        question: str,
        lang: str,
        allowed: BoolMask,
        lexical: Sequence[tuple[str, float]],
        gap: float | None = None,
    ) -> BridgeRanking | None:
        """The carried question's ranking, weighing retrieve.bilingual_weight times how surely
        it translates when the carried words cover more of the question (in the best of their
        top passages) than the question's own words do by retrieve.bilingual_margin, else
        retrieve.bilingual_weight_closed times it; None when nothing translates. The gate also
        stays shut when its own top passages hold retrieve.bilingual_held of the question or,
        with retrieve.bilingual_dense_gate and the multilingual space's `gap` (its best
        other-language cosine minus its best same-language one, `space.py`), when that gap
        is below retrieve.bilingual_dense_margin (bilingual_dense_margin_en for an English
        question).

        bridge.rank(index, "Who pays maternity insurance?", "en", mask, lexical).weight
            -> 1.5
        """
        cfg = self.settings
        own_rows = [index.row_of(c) for c, _ in lexical[:TOP_ROWS]]
        held = _held_share(question, index, own_rows)
        shut = self._shut(lang, held, gap)
        if shut and not cfg.bilingual_weight_closed:  # it would weigh nothing: not carried
            return _shut_ranking(held, gap)
        carried = carry(question, lang, self.glossary, Dictionary.load(), self.synonyms)
        if carried is None:
            return None
        found = index.search(carried.terms, cfg.candidates, allowed, carried.weight)
        whole = lang == "en"
        units = [u for u in carried.units if u.sureness >= SURE]
        own = coverage(units, index, own_rows, carried=False, whole=whole)
        rows = [index.row_of(c) for c, _ in found[:TOP_ROWS]]
        other = coverage(units, index, rows, carried=True, whole=whole)
        opened = bool(units) and other > own + cfg.bilingual_margin and not shut

        confidence = carried.confidence
        lead = max(other - own, 0.0)
        weight = confidence * (
            cfg.bilingual_weight * lead if opened else cfg.bilingual_weight_closed
        )
        gate = {"own": round(own, 3), "carried": round(other, 3), "held": round(held, 3),
                "confidence": round(confidence, 3), "open": float(opened),
                "weight": round(weight, 3)}  # fmt: skip
        if gap is not None:
            gate["gap"] = round(gap, 3)
        return BridgeRanking([c for c, _ in found], weight, gate, carried.terms if opened else [])

    def carried_terms(self, question: str, lang: str) -> list[str]:
        """The question's terms in the other language (the dictionary read if it was not);
        [] when nothing of it translates."""
        carried = carry(question, lang, self.glossary, Dictionary.load(), self.synonyms)
        return carried.terms if carried is not None else []

    def _shut(self, lang: str, held: float, gap: float | None) -> bool:
        """Whether the gate stays shut however much more the carried words cover: with
        retrieve.bilingual_dense_gate and the space's `gap`, when the space finds the question's
        own language nearer (`gap` below the margin), else when the question's own top passages
        hold retrieve.bilingual_held of it."""
        cfg = self.settings
        if cfg.bilingual_dense_gate and gap is not None:
            margin = cfg.bilingual_dense_margin_en if lang == "en" else cfg.bilingual_dense_margin
            return gap < margin
        return held >= cfg.bilingual_held


def _shut_ranking(held: float, gap: float | None) -> BridgeRanking:
    """The bridge of a question its gate shuts before anything is carried: nothing ranked,
    weighing nothing, the gate's readings so far."""
    gate = {"held": round(held, 3), "open": 0.0, "weight": 0.0}
    if gap is not None:
        gate["gap"] = round(gap, 3)
    return BridgeRanking([], 0.0, gate, [])


# The top passages of each side in which the gate looks for the question's words.
TOP_ROWS = 5
# The words the gate compares the two sides on: those that translate surely (a glossary term,
# a dictionary word of one sense, a number or a name).
SURE = 0.5
