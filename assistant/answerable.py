"""Whether the documents answer a question: a logistic regression over retrieval evidence.

A refusal should come from what retrieval found, not from one score under one threshold. Per
question, `features` measures the evidence (`EVIDENCE`); a model uses some of it (`FEATURES`
for the shipped one):

- `amount_mass`: how much of the question one sentence of the top passages holds, as the idf
  of the question's terms it holds over ln(1 + live chunks) (a term in one chunk in a million
  is worth about one); when the question asks for an amount ("how many weeks", "缴费比例是多
  少"), only sentences stating one in that unit count. A near-topic question ("婚假有几天？"
  where the documents list 婚假 but state no days for it) finds its words, or an amount, but
  not both in one sentence;
- `documents`: the share of distinct documents among the top five passages: a question the
  documents answer draws its passages from the document that does, one they don't scatters;
- `dense`: the best passage's embedding similarity (cosine; 0 where dense retrieval is off);
- `lexical`: the best BM25 score over ln(1 + live chunks) (BM25 grows with the corpus);
- `rare_coverage`: the share (idf-weighted) of the question's three rarest indexed terms that
  the best of the top three passages holds;
- `sentence_coverage`: the share (idf-weighted) of the question's indexed terms that the best
  sentence of the top three passages holds;
- `absent`: the share of the question's terms that no passage in the index holds, nor a
  near spelling of them (a misspelt word is asked about, not missing);
- `type_agrees`: 1 when the question asks for no amount, or when a sentence holding at least
  half of the best sentence's share states one in the asked unit ("how many weeks" ->
  "12 weeks"), else 0.

Words that ask rather than name ("how many", 几天, 多少, 什么) count in none of them.

`AnswerableModel` holds the features it weighs and one logistic regression per language
(coefficients, intercept, and the probability below which the assistant refuses), read from a
JSON file: the shipped `assistant/data/answerable.json`, fitted on the public development
sets, or one refitted on a deployment's own labelled questions with `kb abstain fit`.

    model = AnswerableModel.load(path)
    model.probability({"amount_mass": 0.9, "documents": 0.4, ...}, "en") -> 0.93
    fit_logistic(X, y, weights) -> (coefficients, intercept)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from assistant.retrieve.asked_amount import asked_units, expected_units, states_amount
from assistant.retrieve.lexical import BM25Index, tokenize_query
from core.config import Settings
from core.errors import ConfigError
from core.text import CJK_CHAR, split_sentences, tokenize
from core.types import Passage

EVIDENCE = (
    "amount_mass",
    "documents",
    "dense",
    "lexical",
    "rare_coverage",
    "sentence_coverage",
    "absent",
    "type_agrees",
)
# What the shipped model weighs, and `kb abstain fit` by default (docs/benchmarks-history.md,
# "abstention, second pass").
FEATURES = ("amount_mass", "documents")
SHIPPED = Path(__file__).parent / "data" / "answerable.json"
RARE_TERMS = 3
# Words that ask rather than name what is asked about: never counted as absent, rare or held.
ASKING = frozenset({"mani", "much"})
_ASKING_ZH = re.compile(r"几|多少|什么|怎么|怎样|如何|哪|是否|吗|多久|多长|多大")
# Chinese words too common to say what a question is about (有几天, 是多少).
FILLER = frozenset({"有", "是", "的"})
TOP_PASSAGES = 3
# Sentences of this many top passages may hold the asked amount (the fused ranking need not put
# the sentence that states it first).
AMOUNT_PASSAGES = 10
DOCUMENT_PASSAGES = 5


def asks(term: str) -> bool:
    """Whether an index term only asks ("mani" of "how many", 几天, 多少钱).

    asks("几天") -> True; asks("婚假") -> False
    """
    return term in ASKING or term in FILLER or bool(_ASKING_ZH.search(term))


def features(
    question: str,
    passages: Sequence[Passage],
    bm25: BM25Index,
    rows: Sequence[int],
    dense_top: float,
    lexical_scaled: float,
    terms: Sequence[str] | None = None,
) -> dict[str, float]:
    """The evidence for one question; `rows` are the top passages' rows in `bm25`; `terms`:
    the question's terms where they are not its own (a question carried into the other
    language: assistant/retrieve/crosslang/bridge.py).

    features("VPN product?", [p], index, [0], 0.41, 0.7)["absent"] -> 0.5  (when "vpn" is
        nowhere in the index)
    """
    own = tokenize_query(question, synonyms=False) if terms is None else list(terms)
    terms = [t for t in own if not asks(t)]
    idf = {t: bm25.idf(t) for t in terms}
    known = sorted((t for t in terms if idf[t] is not None), key=lambda t: -(idf[t] or 0.0))
    rare = known[:RARE_TERMS]
    rare_mass = sum(idf[t] or 0.0 for t in rare)
    coverage = 0.0
    if rare and rows:
        held = bm25.coverage(rare, rows[:TOP_PASSAGES])
        coverage = float(held.max()) / rare_mass
    mass = sum(idf[t] or 0.0 for t in known)
    asked = asked_units(question)
    shares: list[tuple[float, str]] = []  # (share of the question, sentence), top passages
    amount_mass = 0.0
    chinese = any(CJK_CHAR.search(t) for t in known)  # else jieba's words match none of them
    for i, p in enumerate(passages[:AMOUNT_PASSAGES]):
        for sentence, in_sentence in sentence_terms(p.text, chinese):
            held_mass = sum(idf[t] or 0.0 for t in known if t in in_sentence)
            if i < TOP_PASSAGES:
                shares.append((held_mass / mass if mass else 0.0, sentence))
            if held_mass > amount_mass and (not asked or states_amount(sentence, asked)):
                amount_mass = held_mass
    best = max((share for share, _ in shares), default=0.0)
    units = expected_units(question)
    agrees = not units or any(
        states_amount(sentence, units) for share, sentence in shares if share >= best / 2
    )
    return {
        "amount_mass": amount_mass / math.log1p(len(bm25)) if len(bm25) else 0.0,
        "documents": len({p.doc_id for p in passages[:DOCUMENT_PASSAGES]}) / DOCUMENT_PASSAGES,
        "dense": dense_top,
        "lexical": lexical_scaled,
        "rare_coverage": coverage,
        "sentence_coverage": best,
        "absent": (
            sum(1 for t in terms if idf[t] is None and not _near_spelling(t, bm25.vocab))
            / len(terms)
            if terms
            else 1.0
        ),
        "type_agrees": 1.0 if agrees else 0.0,
    }


def read_evidence(
    question: str,
    passages: Sequence[Passage],
    bm25: BM25Index,
    rows: Sequence[int],
    dense_top: float,
    lexical_scaled: float,
    carried: Sequence[str] = (),
    own: Sequence[str] | None = None,
) -> dict[str, float]:
    """`features` of the question's own terms (`own`, where they are not its tokens alone) or,
    where it was also searched in the other language, of its `carried` terms when those find
    more of it in one sentence (`amount_mass`)."""
    evidence = features(question, passages, bm25, rows, dense_top, lexical_scaled, own)
    if carried:
        across = features(question, passages, bm25, rows, dense_top, lexical_scaled, carried)
        if across["amount_mass"] > evidence["amount_mass"]:
            return across
    return evidence


@lru_cache(maxsize=4096)
def sentence_terms(text: str, words: bool = True) -> tuple[tuple[str, frozenset[str]], ...]:
    """A passage's sentences, each with its index terms (without jieba's words: `words=False`,
    all an English question's terms can match); cached per text, as the top passages of one
    question are often those of the last (tokenizing them again was most of `features`' time:
    jieba's search mode, ~1-2 ms a question).

    sentence_terms("Leave lasts 12 weeks. Laptops.") -> (("Leave lasts 12 weeks.",
        frozenset({"leav", "last", "12", "week"})), (" Laptops.", frozenset({"laptop"})))
    """
    return tuple((s, frozenset(tokenize(s, words=words))) for s in split_sentences(text))


_INITIALS: list[tuple[Mapping[str, int], dict[str, list[str]]]] = []  # the last vocabulary's


def _by_initial(vocab: Mapping[str, int]) -> dict[str, list[str]]:
    """`vocab`'s words by first character, made once per vocabulary (a snapshot's): a near
    spelling is then looked for among the words of one initial, not the whole vocabulary."""
    if not _INITIALS or _INITIALS[0][0] is not vocab:
        groups: dict[str, list[str]] = {}
        for word in vocab:
            if word:
                groups.setdefault(word[0], []).append(word)
        _INITIALS[:] = [(vocab, groups)]
    return _INITIALS[0][1]


def _near_spelling(term: str, vocab: Mapping[str, int]) -> bool:
    """Whether the index holds a spelling of `term` one or two edits away (Latin words of four
    or more letters: "budjet" -> "budget"; a wrong Chinese character changes the word).

    _near_spelling("flihgt", {"flight": 0}) -> True
    """
    if len(term) < 4 or not term.isascii() or not term.isalpha():
        return False
    matcher = SequenceMatcher(None, "", term, autojunk=False)
    for word in _by_initial(vocab).get(term[0], ()):
        if abs(len(word) - len(term)) <= 2:
            matcher.set_seq1(word)
            if matcher.real_quick_ratio() >= 0.75 and matcher.ratio() >= 0.75:
                return True
    return False


@dataclass(frozen=True)
class LangModel:
    coefficients: tuple[float, ...]
    intercept: float
    threshold: float  # refuse below this probability of being answerable


@dataclass(frozen=True)
class AnswerableModel:
    models: dict[str, LangModel]
    source: str = ""
    names: tuple[str, ...] = FEATURES  # the evidence it weighs, in coefficient order

    @classmethod
    def load(cls, path: Path) -> AnswerableModel:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            names = tuple(data["features"])
            unknown = [f for f in names if f not in EVIDENCE]
            if unknown or not names:
                raise ValueError(f"features {unknown or names} are not among {list(EVIDENCE)}")
            models = {
                lang: LangModel(tuple(m["coefficients"]), m["intercept"], m["threshold"])
                for lang, m in data["languages"].items()
            }
            if "en" not in models:
                raise ValueError("no English model (the one languages without their own use)")
            for lang, m in models.items():
                if len(m.coefficients) != len(names):
                    raise ValueError(
                        f"{lang}: {len(m.coefficients)} coefficients, {len(names)} features"
                    )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{path}: not an answerability model ({exc}); refit it with `kb abstain fit` "
                "or set retrieve.answerable_model to empty for the shipped one"
            ) from exc
        return cls(models, str(path), names)

    def probability(self, evidence: Mapping[str, float], lang: str) -> float:
        """P(the documents answer the question), by the model of its language (English's
        for a language without one)."""
        m = self.models.get(lang) or self.models["en"]
        pairs = zip(m.coefficients, self.names, strict=True)
        z = m.intercept + sum(c * evidence[f] for c, f in pairs)
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def refuses(self, evidence: Mapping[str, float], lang: str) -> bool:
        m = self.models.get(lang) or self.models["en"]
        return self.probability(evidence, lang) < m.threshold


@lru_cache(maxsize=8)
def load_model(path: str) -> AnswerableModel:
    """The model at `path` ("" for the shipped one), read once per process."""
    return AnswerableModel.load(Path(path) if path else SHIPPED)


def configured_model(settings: Settings) -> AnswerableModel:
    """The model retrieve.answerable_model names (relative to the config's folder), else the
    shipped one."""
    path = settings.retrieve.answerable_model
    return load_model(str(settings.base_dir / path) if path else "")


# --- fitting ----------------------------------------------------------------------------

Matrix = npt.NDArray[np.float64]


def fit_logistic(
    x: Matrix, y: npt.NDArray[np.float64], weights: npt.NDArray[np.float64], l2: float = 1.0
) -> tuple[list[float], float]:
    """Weighted, L2-regularised logistic regression by Newton's method (the intercept is not
    penalised).

    fit_logistic(np.array([[0.], [1.]]), np.array([0., 1.]), np.ones(2)) -> ([1.6...], -0.8...)
    """
    n, d = x.shape
    design = np.hstack([x, np.ones((n, 1))])
    beta = np.zeros(d + 1)
    penalty = np.full(d + 1, l2)
    penalty[-1] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -50, 50)))
        grad = design.T @ (weights * (p - y)) + penalty * beta
        hess = (design * (weights * p * (1 - p))[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hess + 1e-9 * np.eye(d + 1), grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return [float(b) for b in beta[:-1]], float(beta[-1])


def choose_threshold(
    probabilities: Sequence[float], answerable: Sequence[bool], max_refused: float
) -> float:
    """The refusal threshold with the best accuracy among those refusing at most
    `max_refused` of the answerable questions (the lowest such threshold on ties).

    choose_threshold([0.2, 0.9, 0.1], [True, True, False], 0.0) -> 0.15
    """
    values = sorted(set(probabilities))
    middles = [(a + b) / 2 for a, b in zip(values, values[1:], strict=False)]
    cuts = [0.0, *middles, values[-1] + 1e-9]
    n_answerable = max(sum(answerable), 1)
    best: tuple[float, float] = (-1.0, 0.0)
    for cut in cuts:
        refused = sum(1 for p, a in zip(probabilities, answerable, strict=True) if a and p < cut)
        if refused / n_answerable > max_refused:
            break
        correct = sum(1 for p, a in zip(probabilities, answerable, strict=True) if (p >= cut) == a)
        if correct / len(probabilities) > best[0]:
            best = (correct / len(probabilities), cut)
    return round(best[1], 6)


def fit_language(
    rows: Sequence[tuple[Mapping[str, float], bool]],
    max_refused: float,
    l2: float = 10.0,
    names: Sequence[str] = FEATURES,
) -> LangModel:
    """One language's model from (evidence, answerable) pairs. Features are standardised for
    the fit (so one L2 penalty fits all) and the coefficients mapped back to raw evidence;
    every question weighs the same, so with few unanswerable examples the model leans towards
    answering, and the threshold refuses at most `max_refused` of the answerable ones. `names`
    are the evidence it weighs.

    fit_language([(e_good, True), (e_bad, False), ...], 0.0).threshold -> 0.41...
    """
    x = np.array([[e[f] for f in names] for e, _ in rows], dtype=np.float64)
    y = np.array([1.0 if a else 0.0 for _, a in rows])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0  # a constant feature (dense, where it is off) gets no weight
    standard, intercept = fit_logistic((x - mean) / scale, y, np.ones(len(y)), l2)
    coefficients = np.array(standard) / scale
    intercept -= float(np.dot(coefficients, mean))
    probabilities = [1.0 / (1.0 + math.exp(-(intercept + float(row @ coefficients)))) for row in x]
    threshold = choose_threshold(probabilities, [a for _, a in rows], max_refused)
    return LangModel(
        tuple(round(float(c), 6) for c in coefficients), round(intercept, 6), threshold
    )


def model_json(
    models: Mapping[str, LangModel], note: str, names: Sequence[str] = FEATURES
) -> dict[str, Any]:
    return {
        "features": list(names),
        "note": note,
        "languages": {
            lang: {
                "coefficients": list(m.coefficients),
                "intercept": m.intercept,
                "threshold": m.threshold,
            }
            for lang, m in models.items()
        },
    }
