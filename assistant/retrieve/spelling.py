"""A question's misspelt words read as the library's own spelling of them, for BM25: a word the
index does not hold adds nothing to a passage's score, so a question whose content words are
misspelt ("Do I need reciepts for small expences?", "经济补尝的月工资包括哪些收入？") is left to
the dense side and its few correct words, and in a large library other documents' passages on
the topic take its answer's place. `Speller.terms` gives the index terms of the words such a
question meant:

- English: a lower-case word of four or more letters that neither the library's index nor the
  dictionary (`known`: CC-CEDICT's English) holds, read as the library's most frequent word an
  edit away with the same first letter, two from eight letters (`misspelt`: "reciepts" ->
  "receipts", "harrasment" -> "harassment"); "clock" or "PreCheck" are left as they are.
- Chinese: a run of the question's own words (jieba, two to four characters) that the library
  does not hold, one of them a word it never uses, read as a library word of the same sound
  (pinyin without tones) one character apart, that character in a word of the question that
  is neither a stop word nor a common word (jieba's frequencies): 补尝 -> 补偿, 年修假 -> 年休假,
  公伤 -> 工伤; not 同事 -> 同时, nor 有几 -> 有机.

The library's words are read once per snapshot, on the first question that has a word to read
(or ahead of it: `Speller.prepare`).

    speller = Speller({"receipt": 0, "expens": 1}, ["Receipts for expenses."], set)
    speller.terms("Do I need reciepts for small expences?") -> ["receipt", "expens"]
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from functools import cache, lru_cache

from assistant.retrieve.crosslang.glossary import Dictionary
from core.text import EN_STOP, IDEOGRAPH_RUN, ZH_STOP, segmenter, tokenize

_WORD = re.compile(r"[A-Za-z]+")
_LOWER = re.compile(r"[a-z]+")
MIN_LETTERS = 4  # shorter English words are left as they are: "bok" may be "book" or "box"
LONG_WORD = 8  # from this length a word may be two edits away
ZH_SPANS = (2, 3, 4)  # the lengths of a Chinese word read again
RARE = 10  # a Chinese word jieba counts fewer times than this may be a misspelt one (公伤: 3)


def edits(a: str, b: str) -> int:
    """The optimal string alignment distance (rapidfuzz's OSA): insertions, deletions,
    substitutions and swaps of neighbours.

    edits("flihgts", "flights") -> 1
    """
    from rapidfuzz.distance import OSA  # imported on the first word read (~40 ms cold)

    return int(OSA.distance(a, b))


def misspelt(a: str, b: str) -> bool:
    """Whether two English words are one's misspelling of the other: the same first letter, at
    least four letters, an edit apart (two from eight letters).

    misspelt("parantal", "parental") -> True;  misspelt("hire", "fire") -> False
    """
    allowed = allowed_edits(a, b)
    return allowed > 0 and edits(a, b) <= allowed


def allowed_edits(a: str, b: str) -> int:
    """The edits `misspelt` allows between two words: 2 from eight letters, else 1; -1 for
    words of different first letters or under four letters, which it never reads as one."""
    shorter = min(len(a), len(b))
    if a[0] != b[0] or shorter < MIN_LETTERS:
        return -1
    return 2 if shorter >= LONG_WORD else 1


@lru_cache(maxsize=1)
def dictionary_english() -> frozenset[str]:
    """The English index terms of CC-CEDICT's senses (read with the dictionary: 3-4 s of CPU,
    once per process, which the bridge to the other language reads too)."""
    senses = Dictionary.load().zh_en.values()
    return frozenset(term for keys in senses for key in keys for term in key)


@cache
def _sound(word: str) -> tuple[str, ...]:
    from pypinyin import lazy_pinyin  # its dictionaries load on the first Chinese word read

    return tuple(lazy_pinyin(word))


class Speller:
    """The library's words (its BM25 terms `vocab` and the English words of its `texts`), and
    the terms of the words a question misspelt; `known` gives the dictionary's English index
    terms, read on the first English word the library does not hold."""

    def __init__(
        self, vocab: Mapping[str, int], texts: Iterable[str], known: Callable[[], Container[str]]
    ) -> None:
        self.vocab = vocab
        self._texts = texts
        self._known = known
        self._ready = threading.Lock()
        self._english: dict[str, tuple[list[str], list[int]]] | None = None
        self._chinese: dict[tuple[str, ...], list[str]] | None = None  # by sound

    def terms(self, question: str) -> list[str]:
        """The index terms of what the question's misspelt words meant, each once, none of
        them the question's own terms (the module docstring)."""
        text = unicodedata.normalize("NFKC", question)
        own = set(tokenize(text))
        found = [*self._english_terms(text), *self._chinese_terms(text)]
        return [t for t in dict.fromkeys(found) if t not in own and t in self.vocab]

    def prepare(self) -> None:
        """Read the library's words now (English by first letter, Chinese by sound), not on
        the first question that has a word to read."""
        self._english_words()
        self._chinese_words()

    # --- English ---------------------------------------------------------------------------
    def _english_terms(self, text: str) -> list[str]:
        words = [w.lower() for i, w in enumerate(_WORD.findall(text)) if i == 0 or w.islower()]
        unknown = [w for w in words if len(w) >= MIN_LETTERS and w not in EN_STOP
                   and not set(tokenize(w)) & self.vocab.keys()]  # fmt: skip
        out: list[str] = []
        for word in unknown:
            words, counts = self._english_words().get(word[0], ([], []))
            near = [(d, -counts[i], w) for w, d, i in _within_two_edits(word, words)
                    if d <= allowed_edits(word, w)]  # fmt: skip
            # the dictionary last: most unknown words have no library word near them, and a
            # process that never meets one never reads it (a cold `kb ask`: 3-4 s)
            if near and not any(t in self._known() for t in tokenize(word)):
                out += tokenize(min(near)[2])
        return out

    def _english_words(self) -> dict[str, tuple[list[str], list[int]]]:
        """The library's English words of four letters or more and their counts, by first
        letter."""
        with self._ready:
            if self._english is None:
                counts = Counter(w for text in self._texts for w in _LOWER.findall(text.lower())
                                 if len(w) >= MIN_LETTERS)  # fmt: skip
                self._english = {}
                for word, n in counts.items():
                    words, ns = self._english.setdefault(word[0], ([], []))
                    words.append(word)
                    ns.append(n)
            return self._english

    # --- Chinese ---------------------------------------------------------------------------
    def _chinese_terms(self, text: str) -> list[str]:
        out: list[str] = []
        for run in IDEOGRAPH_RUN.findall(text):
            words = list(segmenter().cut(run, HMM=False))
            if all(w in self.vocab for w in words):
                continue
            for a in range(len(words)):
                for b in range(a + 1, len(words) + 1):
                    span = "".join(words[a:b])
                    if len(span) > max(ZH_SPANS):
                        break
                    if (
                        len(span) in ZH_SPANS
                        and span not in self.vocab
                        and any(w not in self.vocab for w in words[a:b])
                    ):
                        out += self._sounding(span, words[a:b])
        return out

    def _sounding(self, span: str, words: Sequence[str]) -> list[str]:
        """The terms of the library's words that sound as `span` (the question's `words`) and
        differ from it in one character of a word that may be misspelt."""
        owner = [w for w in words for _ in w]  # the question's word of each character
        out: list[str] = []
        for word in self._chinese_words().get(_sound(span), ()):
            apart = [i for i, (x, y) in enumerate(zip(span, word, strict=True)) if x != y]
            if len(apart) == 1 and _may_be_misspelt(owner[apart[0]]):
                out += tokenize(word)
        return out

    def _chinese_words(self) -> dict[tuple[str, ...], list[str]]:
        with self._ready:
            if self._chinese is None:
                self._chinese = {}
                for word in self.vocab:
                    if len(word) in ZH_SPANS and IDEOGRAPH_RUN.fullmatch(word):
                        self._chinese.setdefault(_sound(word), []).append(word)
            return self._chinese


def _within_two_edits(word: str, words: Sequence[str]) -> list[tuple[str, int, int]]:
    """The `words` at most two edits from `word` (`edits`), as (word, edits, position),
    measured in rapidfuzz's C++ (imported on the first word read: ~40 ms cold)."""
    from rapidfuzz import process
    from rapidfuzz.distance import OSA

    found = process.extract(word, words, scorer=OSA.distance, score_cutoff=2, limit=None)
    return [(w, int(d), i) for w, d, i in found]


def _may_be_misspelt(word: str) -> bool:
    """A word of the question may hold a misspelt character: not a stop word, and one
    character (what jieba leaves of a word it does not know) or a rare word (公伤, 监查)."""
    return word not in ZH_STOP and (len(word) == 1 or segmenter().FREQ.get(word, 0) < RARE)
