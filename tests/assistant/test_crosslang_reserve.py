"""The other language's side of a ranking and of a refusal, pure logic: its best passages kept
near the top of a fused ranking whatever the space's gate decided (`crosslang/space.py`,
`reserved`), and when a question's evidence is read in the other language too
(`crosslang/evidence.py`)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from assistant.retrieve.crosslang.evidence import crosses, reads_across
from assistant.retrieve.crosslang.space import (
    _best,
    distinct,
    headings_only,
    like_with_like,
    reserved,
)
from core.types import Passage


def _p(chunk_id: str, score: float) -> Passage:
    return Passage(chunk_id, "d", "f.pdf", chunk_id, score=score)


RANKED = [_p("a", 0.9), _p("b", 0.8), _p("c", 0.7), _p("d", 0.6), _p("x", 0.1)]


def _reserved(best: list[str], place: int, ranked: list[Passage] = RANKED
              ) -> list[tuple[str, float]]:
    return [(p.chunk_id, p.score) for p in reserved(ranked, best, place, _p)]


def test_the_best_other_language_passages_go_just_after_the_first_places() -> None:
    # y was not among the ranked passages: made; x moved up; both scored as b, the one before
    # them (packing, which orders by score, keeps them there)
    assert _reserved(["y", "x"], 2) == [("a", 0.9), ("b", 0.8), ("y", 0.8), ("x", 0.8),
                                        ("c", 0.7), ("d", 0.6)]  # fmt: skip


def test_passages_already_near_the_top_stay_where_fusion_put_them() -> None:
    assert reserved(RANKED, ["c", "d"], 2, _p) == RANKED
    assert [c for c, _ in _reserved(["b", "x"], 2)] == ["a", "b", "x", "c", "d"]


def test_nothing_reserved_leaves_the_ranking_alone() -> None:
    assert reserved(RANKED, [], 5, _p) == RANKED
    assert _reserved(["y"], 5, RANKED[:1]) == [("a", 0.9), ("y", 0.9)]


def test_the_best_few_are_those_a_full_stable_sort_puts_first() -> None:
    """The other language's best few without sorting all of its passages: ties in position
    order, as the full sort orders them."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        scores = rng.integers(0, 5, size=int(rng.integers(1, 40))).astype(np.float32)
        for n in (0, 1, 2, 3, 39, 50):
            assert list(_best(scores, n)) == list(np.argsort(-scores, kind="stable")[:n])


def test_the_gate_reads_the_larger_language_at_its_size_ratio() -> None:
    """Where one language holds k times the other's passages its k-th best is compared, not
    its best: five times as many English passages, the fifth best English one."""
    english = np.array([0.83, 0.80, 0.79, 0.78, 0.76, 0.70, 0.60, 0.50, 0.40, 0.30], np.float32)
    chinese = np.array([0.88, 0.70], np.float32)
    other, same = like_with_like(english, chinese, (10, 2))
    assert (round(other, 2), round(same, 2)) == (0.76, 0.88)
    other, same = like_with_like(chinese, english, (2, 10))  # an English question
    assert (round(other, 2), round(same, 2)) == (0.88, 0.76)
    assert like_with_like(english[:2], chinese, (2, 2)) == (float(english[0]), float(chinese[0]))
    assert like_with_like(english, np.array([], np.float32), (10, 0))[1] == -1.0


def _none(row: int) -> bool:
    return False


def test_the_reserve_takes_each_documents_best_passage_only() -> None:
    """One document's many near passages (a large handbook on the topic) take one place of the
    reserve; the next document's best takes the next."""
    doc_of = ["a", "a", "b", "a", "c"]
    assert distinct([0, 1, 3, 2, 4], doc_of, _none, 2) == [0, 2]
    assert distinct([0, 1, 3, 2, 4], doc_of, _none, 3) == [0, 2, 4]
    assert distinct([0, 1, 3], doc_of, _none, 2) == [0]  # one document: one place
    assert distinct([0, 2], doc_of, _none, 0) == []


def test_the_reserve_passes_over_passages_that_answer_nothing() -> None:
    doc_of = ["a", "a", "b"]
    assert distinct([0, 1, 2], doc_of, lambda r: r == 0, 2) == [1, 2]


def test_a_title_or_heading_chunk_is_headings_only() -> None:
    title = "Sourcegraph Handbook: Time Off and Leave"
    assert headings_only(title, (title,))
    faq = "FAQ for US-based Teammates"
    assert headings_only(f"{faq}\n", (title, "FAQ", faq))
    assert not headings_only("Leave duration:\nup to 4 weeks of paid leave", ("Leave duration:",))
    assert not headings_only("", (title,))
    assert not headings_only("第三条职工累计工作已满1年不满10年的，年休假5天", ("第三条",))


REFUSED = {"amount_mass": 0.0, "documents": 1.0}  # the shipped model refuses this
ANSWERED = {"amount_mass": 3.0, "documents": 0.2}


def test_evidence_is_read_across_only_for_a_refusal_beside_the_other_language(
    make_settings,  # type: ignore[no-untyped-def]
) -> None:
    on = make_settings(retrieve={"crosslang_evidence": True})
    assert reads_across(on, "en", REFUSED, crossed=True)
    assert not reads_across(on, "en", ANSWERED, crossed=True)  # its own words answer it
    assert not reads_across(on, "en", REFUSED, crossed=False)  # nothing to read across
    off = make_settings(retrieve={"crosslang_evidence": False})
    assert not reads_across(off, "en", REFUSED, crossed=True)


def test_crossing_is_other_language_passages_among_those_the_model_reads() -> None:
    own = np.array([True, True, False])  # rows 0 and 1 are in the question's language
    snap = SimpleNamespace(row_of={"e1": 0, "e2": 1, "z1": 2})
    passages = [Passage(c, "d", "f.pdf", "t") for c in ("e1", "e2", "z1")]
    assert crosses(own, snap, passages)  # type: ignore[arg-type]
    assert not crosses(own, snap, passages[:2])  # type: ignore[arg-type]
    assert not crosses(own, snap, [*passages[:2]] * 5 + passages[2:])  # type: ignore[arg-type]
