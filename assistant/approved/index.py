"""The matcher of approved answers, pure: a question against every approved phrasing (each
answer's question and its also-asked variants), by two kinds of evidence that must both clear
the thresholds of the question's language, and then the wording check (assistant/approved/
wording.py: the same content words, misspellings forgiven, the same numbers):

- lexical: the cosine of their feature counts: character trigrams of each English word (so a
  typo, "parantal" for "parental", keeps most of its word's trigrams), Chinese characters and
  character bigrams (年修假 for 年休假 keeps 年 and 假 and the rest of the question), and the
  index terms retrieval uses (core/text.py `tokenize`: stems, jieba words, numeral values);
- dense: the cosine of the question's vector (the one retrieval embeds) and the phrasing's.

The scores find candidates cheaply (a question is embedded only when some phrasing clears the
lexical bar); the wording check decides. Without it the scores alone, at bars with no false
match on both public sets, gave the sample store's "How many days of annual leave do I get?"
the carry-over answer (0.86, 0.91). With it no bar on the swept grid gives a false match, so the
bars are set for misspellings: a typo costs all-MiniLM much of its similarity (dense 0.6), and
all-MiniLM reads no Chinese (dense 0.5: the characters decide). Measured by `python -m bench
approved` (bench/quality/approved_match.py). A question in the other language shares no words with a
phrasing: it matches through a variant an admin added in that language.

    index = MatchIndex(answers, vectors)                # vectors: one row per phrasing
    index.match("How many hours of leave carry over?", vector)[0].answer.id -> 3
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse

from assistant.approved.wording import same_wording
from assistant.retrieve.dense import one_blas_thread
from core.text import EN_STOP, IDEOGRAPH, ZH_STOP, Lang, detect_lang, tokenize
from core.types import ApprovedAnswer

Vectors = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Thresholds:
    """The least lexical and dense evidence a match needs, per question language."""

    lexical: dict[str, float]
    dense: dict[str, float]


# Measured by bench/quality/approved_match.py (docs/owners.md, "Approved answers", has the figures).
THRESHOLDS = Thresholds(lexical={"en": 0.3, "zh": 0.45}, dense={"en": 0.6, "zh": 0.5})

_WORD = re.compile(r"[a-z]+|[0-9]+(?:\.[0-9]+)?")
_HAN_RUN = re.compile(f"[{IDEOGRAPH}]+")
_ZH_STOP_CHARS = frozenset(w for w in ZH_STOP if len(w) == 1)


def features(text: str) -> Counter[str]:
    """The lexical features of a question: word trigrams, Chinese characters and bigrams, and
    index terms (prefixed "t:").

    sorted(features("Parental leave")) -> [' le', ' pa', 'al ', 'are', 'ave', 'eav', 'ent',
        'lea', 'nta', 'par', 'ren', 't:leav', 't:parental', 'tal', 've ']
    """
    text = unicodedata.normalize("NFKC", text).lower()
    out: Counter[str] = Counter()
    for word in _WORD.findall(text):
        if word in EN_STOP:
            continue
        padded = f" {word} "
        out.update(padded[i : i + 3] for i in range(len(padded) - 2))
    for run in _HAN_RUN.findall(text):
        out.update(c for c in run if c not in _ZH_STOP_CHARS)
        out.update(run[i : i + 2] for i in range(len(run) - 1))
    out.update("t:" + term for term in tokenize(text))
    return out


@dataclass(frozen=True)
class Candidate:
    """An approved answer a question matched, with the evidence of its best phrasing."""

    answer: ApprovedAnswer
    phrasing: str
    lexical: float
    dense: float


class MatchIndex:
    """Every phrasing of some approved answers as a sparse matrix of normalised feature counts
    and a matrix of their vectors; `match` scores a question against all of them at once."""

    def __init__(
        self,
        answers: Sequence[ApprovedAnswer],
        vectors: Vectors,
        thresholds: Thresholds = THRESHOLDS,
    ) -> None:
        self.answers = list(answers)
        self.thresholds = thresholds
        self.owner: list[int] = []  # phrasing -> its answer's position in `answers`
        self.phrasings: list[str] = []
        for i, answer in enumerate(self.answers):
            for phrasing in answer.phrasings:
                self.owner.append(i)
                self.phrasings.append(phrasing)
        if len(vectors) != len(self.phrasings):
            raise ValueError(f"{len(vectors)} vectors for {len(self.phrasings)} phrasings")
        matrix = np.asarray(vectors, dtype=np.float32)
        self.vectors = matrix if matrix.ndim == 2 else matrix.reshape(len(self.phrasings), -1)
        self.vocabulary: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        values: list[float] = []
        for row, phrasing in enumerate(self.phrasings):
            counts = features(phrasing)
            norm = float(np.sqrt(sum(v * v for v in counts.values()))) or 1.0
            for gram, count in counts.items():
                rows.append(self.vocabulary.setdefault(gram, len(self.vocabulary)))
                cols.append(row)
                values.append(count / norm)
        # feature x phrasing: a question's features select rows, summed with their weights
        self.by_feature = sparse.csr_matrix(
            (values, (rows, cols)), shape=(len(self.vocabulary), len(self.phrasings)),
            dtype=np.float32,
        )

    def __len__(self) -> int:
        return len(self.phrasings)

    def lexical(self, question: str) -> npt.NDArray[np.float32]:
        """The lexical cosine of the question with every phrasing."""
        counts = features(question)
        norm = float(np.sqrt(sum(v * v for v in counts.values())))
        known = [(self.vocabulary[g], c) for g, c in counts.items() if g in self.vocabulary]
        if not known or not norm:
            return np.zeros(len(self.phrasings), dtype=np.float32)
        ids = [i for i, _ in known]
        weights = np.array([c / norm for _, c in known], dtype=np.float32)
        scores: npt.NDArray[np.float32] = np.asarray(
            weights @ self.by_feature[ids], dtype=np.float32
        ).ravel()
        return scores

    def lexical_pass(self, question: str) -> npt.NDArray[np.float32] | None:
        """The lexical scores when some phrasing clears the lexical threshold; None when none
        does (then no vector is needed)."""
        if not len(self):
            return None
        lexical = self.lexical(question)
        return lexical if (lexical >= self.thresholds.lexical[detect_lang(question)]).any() \
            else None

    def match(
        self, question: str, vector: Vectors, lexical: npt.NDArray[np.float32] | None = None
    ) -> list[Candidate]:
        """The approved answers whose phrasings clear both thresholds for `question` (its
        `vector` from the question embedder; `lexical`: its scores, when known), best first,
        each once."""
        if not len(self):
            return []
        lang: Lang = detect_lang(question)
        lexical = self.lexical(question) if lexical is None else lexical
        with one_blas_thread():  # a second BLAS thread is a wait on a busy machine (dense.py)
            dense = self.vectors @ np.asarray(vector, dtype=np.float32)
        scored = np.flatnonzero(
            (lexical >= self.thresholds.lexical[lang]) & (dense >= self.thresholds.dense[lang])
        )
        passing = [i for i in scored if same_wording(question, self.phrasings[i])]
        ranked = sorted(passing, key=lambda i: -(lexical[i] + dense[i]))
        seen: set[int] = set()
        out: list[Candidate] = []
        for i in ranked:
            owner = self.owner[i]
            if owner not in seen:
                seen.add(owner)
                out.append(Candidate(self.answers[owner], self.phrasings[i],
                                     float(lexical[i]), float(dense[i])))
        return out
