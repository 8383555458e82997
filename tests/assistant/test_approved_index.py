"""The matcher of approved answers, pure: features that survive typos, both kinds of evidence
needed, the question's language deciding the thresholds, the best answer first and each once."""

from __future__ import annotations

import numpy as np

from assistant.approved.index import MatchIndex, Thresholds, features
from core.types import ApprovedAnswer

LOOSE = Thresholds(lexical={"en": 0.3, "zh": 0.5}, dense={"en": 0.8, "zh": 0.2})


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def answers() -> list[ApprovedAnswer]:
    return [
        ApprovedAnswer(1, "How many days of parental leave do I get?", "12 weeks [1]", "alice",
                       ("育儿假有多少天？",)),
        ApprovedAnswer(2, "年休假有几天？", "5 天 [1]", "alice"),
    ]


def index() -> MatchIndex:
    # one row per phrasing: the English question, its Chinese variant, the Chinese question
    vectors = np.stack([unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)])
    return MatchIndex(answers(), vectors, LOOSE)


def cosine(a: str, b: str) -> float:
    fa, fb = features(a), features(b)
    dot = sum(fa[k] * fb[k] for k in fa)
    norms = np.sqrt(sum(v * v for v in fa.values())) * np.sqrt(sum(v * v for v in fb.values()))
    return float(dot / norms)


def test_typos_keep_most_features_and_stop_words_count_for_nothing() -> None:
    assert cosine("parental leave days", "parantal leave days") > 0.6
    assert cosine("年休假有几天", "年修假有几天") > 0.5
    assert features("What is the of") == features("")  # stop words only
    assert cosine("parental leave days", "password rotation policy") < 0.1


def test_a_match_needs_both_lexical_and_dense_evidence() -> None:
    idx = index()
    typo = "How many days of parantal leave do I get?"
    found = idx.match(typo, unit(1, 0.1, 0))
    assert [c.answer.id for c in found] == [1] and found[0].lexical > 0.5
    assert idx.match(typo, unit(0, 0, 1)) == []  # words alike, meaning not: no match
    assert idx.match("What is the password policy?", unit(1, 0, 0)) == []  # meaning alike only


def test_the_other_language_matches_through_a_variant_with_its_thresholds() -> None:
    idx = index()
    # Chinese: the lexical side decides (dense from an English embedder is weak: low bar)
    found = idx.match("育儿假有几天？", unit(0.3, 1, 0))
    assert [(c.answer.id, c.phrasing) for c in found] == [(1, "育儿假有多少天？")]
    # the same template of another leave shares many characters and here clears both bars:
    # the wording check keeps it out (assistant/approved/wording.py)
    assert [c.answer.id for c in idx.match("育儿假有几天？", unit(0.3, 1, 0.3))] == [1]
    assert [c.answer.id for c in idx.match("年修假有几天？", unit(0, 0.2, 1))] == [2]
    assert idx.match("报销需要什么发票？", unit(0, 0.2, 1)) == []


def test_each_answer_once_best_first_and_the_lexical_pass() -> None:
    many = [ApprovedAnswer(1, "annual leave carry over", "a", "x", ("carry over annual leave",)),
            ApprovedAnswer(2, "annual leave carried over", "b", "x")]
    idx = MatchIndex(many, np.stack([unit(1, 0), unit(1, 0), unit(1, 0.05)]), LOOSE)
    found = idx.match("annual leave carried over", unit(1, 0.05))
    assert [c.answer.id for c in found] == [2, 1]
    assert idx.lexical_pass("password rotation") is None
    assert idx.lexical_pass("annual leave carry over") is not None
    empty = MatchIndex([], np.zeros((0, 2), dtype=np.float32), LOOSE)
    assert empty.match("anything", unit(1, 0)) == [] and empty.lexical_pass("x") is None


class FakeLedger:
    def __init__(self, answers: list[ApprovedAnswer]) -> None:
        self.answers, self.generation, self.reads = answers, 1, 0

    def approved_generation(self) -> int:
        self.reads += 1
        return self.generation

    def approved_answers(self, status: str | None = None) -> list[ApprovedAnswer]:
        return [a for a in self.answers if status is None or a.status == status]


class FakeStore:
    """What `ApprovedAnswers` reads of a store: the ledger's approved answers and the question
    embedder (each text a fixed vector, every text it was asked for counted)."""

    def __init__(self, answers: list[ApprovedAnswer]) -> None:
        self.ledger = FakeLedger(answers)
        self.embedded: list[str] = []

    def embed_question(self, texts: list[str]) -> np.ndarray:
        self.embedded += texts
        return np.stack([unit(1, len(t) % 3) for t in texts])


def test_the_ledger_is_read_once_a_second_and_only_new_phrasings_are_embedded() -> None:
    from assistant.approved.answers import RECHECK_S, ApprovedAnswers

    now = [100.0]
    store = FakeStore(answers()[:1])
    approved = ApprovedAnswers(store, LOOSE, clock=lambda: now[0])  # type: ignore[arg-type]
    assert len(approved.index()) == 2 and store.ledger.reads == 1
    assert sorted(store.embedded) == sorted(answers()[0].phrasings)
    store.ledger.answers = answers()  # another process approved one more
    store.ledger.generation += 1
    now[0] += RECHECK_S / 2
    assert len(approved.index()) == 2 and store.ledger.reads == 1  # not read yet
    now[0] += RECHECK_S
    assert len(approved.index()) == 3 and store.ledger.reads == 2
    assert store.embedded[2:] == ["年休假有几天？"]  # the new phrasing alone
