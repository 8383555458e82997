"""The other language's side of a ranking and of a refusal, pure logic: its best passages kept
near the top of a fused ranking whatever the space's gate decided (`crosslang/space.py`,
`reserved`), and when a question's evidence is read in the other language too
(`crosslang/evidence.py`)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from assistant.retrieve.crosslang.evidence import crosses, reads_across
from assistant.retrieve.crosslang.space import reserved
from core.types import Passage

FUSED = [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6), ("x", 0.1)]


def test_the_best_other_language_passages_go_just_after_the_first_places() -> None:
    out = reserved(FUSED, ["y", "x"], 2)
    assert [c for c, _ in out] == ["a", "b", "y", "x", "c", "d"]
    # scored as the passage before them: packing, which orders by score, keeps them there
    assert [s for _, s in out][:5] == [0.9, 0.8, 0.8, 0.8, 0.7]


def test_passages_already_near_the_top_stay_where_fusion_put_them() -> None:
    assert reserved(FUSED, ["c", "d"], 2) == FUSED
    out = reserved(FUSED, ["b", "x"], 2)  # b is there already; x moves up
    assert [c for c, _ in out] == ["a", "b", "x", "c", "d"]


def test_nothing_reserved_leaves_the_ranking_alone() -> None:
    assert reserved(FUSED, [], 5) == FUSED
    assert [c for c, _ in reserved(FUSED[:1], ["y"], 5)] == ["a", "y"]


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
