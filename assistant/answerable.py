"""Whether the documents answer a question: a logistic regression over retrieval evidence.

A refusal should come from what retrieval found, not from one score under one threshold. Per
question, `features` measures the evidence:

- `dense`: the best passage's embedding similarity (cosine; 0 where dense retrieval is off);
- `lexical`: the best BM25 score over ln(1 + live chunks) (BM25 grows with the corpus);
- `rare_coverage`: the share (idf-weighted) of the question's three rarest indexed terms that
  the best of the top three passages holds;
- `sentence_coverage`: the share (idf-weighted) of the question's indexed terms that one
  sentence of the top three passages holds, the best such sentence: a near-topic question
  finds its words spread over a passage, an answered one finds them together;
- `absent`: the share of the question's terms that no passage in the index holds, nor a
  near spelling of them (a misspelt word is asked about, not missing);
- `type_agrees`: 1 when the question asks for no amount, or when a sentence holding at least
  half of the best sentence's share states one in the asked unit ("how many weeks" ->
  "12 weeks"), else 0.

`AnswerableModel` holds one logistic regression per language (coefficients, intercept, and
the probability below which the assistant refuses), read from a JSON file: the shipped
`assistant/data/answerable.json`, fitted on the public development sets, or one refitted on
a deployment's own labelled questions with `kb abstain fit`.

    model = AnswerableModel.load(path)
    model.probability({"dense": 0.6, "lexical": 1.2, ...}, "en") -> 0.93
    fit_logistic(X, y, weights) -> (coefficients, intercept)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from assistant.answer_type import expected_units, states_amount
from assistant.lexical import BM25Index, tokenize_query
from core.errors import ConfigError
from core.text import split_sentences, tokenize
from core.types import Passage

FEATURES = ("dense", "lexical", "rare_coverage", "sentence_coverage", "absent", "type_agrees")
SHIPPED = Path(__file__).parent / "data" / "answerable.json"
RARE_TERMS = 3
# Words that ask rather than name what is asked about: never counted as absent or rare.
ASKING = frozenset(
    {"mani", "much", "多少", "几", "什么", "怎么", "怎样", "如何", "哪些", "是否", "吗"}
)
TOP_PASSAGES = 3


def features(
    question: str,
    passages: Sequence[Passage],
    bm25: BM25Index,
    rows: Sequence[int],
    dense_top: float,
    lexical_scaled: float,
) -> dict[str, float]:
    """The evidence for one question; `rows` are the top passages' rows in `bm25`.

    features("VPN product?", [p], index, [0], 0.41, 0.7)["absent"] -> 0.5  (when "vpn" is
        nowhere in the index)
    """
    terms = [t for t in tokenize_query(question, synonyms=False) if t not in ASKING]
    idf = {t: bm25.idf(t) for t in terms}
    known = sorted((t for t in terms if idf[t] is not None), key=lambda t: -(idf[t] or 0.0))
    rare = known[:RARE_TERMS]
    rare_mass = sum(idf[t] or 0.0 for t in rare)
    coverage = 0.0
    if rare and rows:
        held = bm25.coverage(rare, rows[:TOP_PASSAGES])
        coverage = float(held.max()) / rare_mass
    mass = sum(idf[t] or 0.0 for t in known)
    shares: list[tuple[float, str]] = []
    for p in passages[:TOP_PASSAGES]:
        for sentence in split_sentences(p.text):
            in_sentence = set(tokenize(sentence))
            share = sum(idf[t] or 0.0 for t in known if t in in_sentence) / mass if mass else 0.0
            shares.append((share, sentence))
    best = max((share for share, _ in shares), default=0.0)
    units = expected_units(question)
    agrees = not units or any(
        states_amount(sentence, units) for share, sentence in shares if share >= best / 2
    )
    return {
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

    @classmethod
    def load(cls, path: Path) -> AnswerableModel:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if tuple(data["features"]) != FEATURES:
                raise ValueError(f"features {data['features']} are not {list(FEATURES)}")
            models = {
                lang: LangModel(tuple(m["coefficients"]), m["intercept"], m["threshold"])
                for lang, m in data["languages"].items()
            }
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{path}: not an answerability model ({exc}); refit it with `kb abstain fit` "
                "or set retrieve.answerable_model to empty for the shipped one"
            ) from exc
        return cls(models, str(path))

    def probability(self, evidence: Mapping[str, float], lang: str) -> float:
        """P(the documents answer the question), by the model of its language (English's
        for a language without one)."""
        m = self.models.get(lang) or self.models["en"]
        pairs = zip(m.coefficients, FEATURES, strict=True)
        z = m.intercept + sum(c * evidence[f] for c, f in pairs)
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def refuses(self, evidence: Mapping[str, float], lang: str) -> bool:
        m = self.models.get(lang) or self.models["en"]
        return self.probability(evidence, lang) < m.threshold


@lru_cache(maxsize=8)
def load_model(path: str) -> AnswerableModel:
    """The model at `path` ("" for the shipped one), read once per process."""
    return AnswerableModel.load(Path(path) if path else SHIPPED)


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


def choose_threshold(probabilities: Sequence[float], answerable: Sequence[bool],
                     max_refused: float) -> float:
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
    rows: Sequence[tuple[Mapping[str, float], bool]], max_refused: float, l2: float = 10.0
) -> LangModel:
    """One language's model from (evidence, answerable) pairs. Features are standardised for
    the fit (so one L2 penalty fits all) and the coefficients mapped back to raw evidence;
    every question weighs the same, so with few unanswerable examples the model leans towards
    answering, and the threshold refuses at most `max_refused` of the answerable ones.

    fit_language([(e_good, True), (e_bad, False), ...], 0.0).threshold -> 0.41...
    """
    x = np.array([[e[f] for f in FEATURES] for e, _ in rows], dtype=np.float64)
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


def model_json(models: Mapping[str, LangModel], note: str) -> dict[str, Any]:
    return {
        "features": list(FEATURES),
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
