"""Weighted reciprocal rank fusion."""

from __future__ import annotations

import pytest

from assistant.retrieve.fuse import rrf, score_fuse, tied_ranks, weights_for_lang


def test_scores_are_weighted_reciprocal_ranks() -> None:
    fused = dict(rrf({"lexical": ["a", "b"], "dense": ["b", "c"]}, {"dense": 0.5}, k=10))
    assert fused["a"] == pytest.approx(1 / 11)
    assert fused["b"] == pytest.approx(1 / 12 + 0.5 / 11)
    assert fused["c"] == pytest.approx(0.5 / 12)


def test_ties_go_to_the_lexical_rank_not_the_dense_side() -> None:
    # a mirror image: every id has the same fused score
    rankings = {"dense": ["d1", "l1", "d3", "l3"], "lexical": ["l1", "d1", "l3", "d3"]}
    fused = rrf(rankings)
    assert fused[0][1] == fused[1][1]
    assert [c for c, _ in fused] == ["l1", "d1", "l3", "d3"]
    # dict order of the retrievers does not matter
    flipped = {"lexical": rankings["lexical"], "dense": rankings["dense"]}
    assert rrf(flipped) == rrf(rankings)


def test_ties_outside_the_lexical_ranking_break_by_id() -> None:
    assert [c for c, _ in rrf({"dense": ["b", "a"], "other": ["a", "b"]})] == ["a", "b"]


def test_zero_weight_contributes_nothing() -> None:
    fused = rrf({"lexical": ["a"], "dense": ["b", "a"]}, {"dense": 0.0})
    assert [c for c, _ in fused] == ["a"]


def test_repeated_ids_count_once_at_their_best_rank() -> None:
    assert dict(rrf({"lexical": ["a", "a", "b"]}, k=0)) == {"a": 1.0, "b": pytest.approx(1 / 3)}


def test_negative_k_is_refused() -> None:
    with pytest.raises(ValueError):
        rrf({"lexical": ["a"]}, k=-1)


def test_dense_weight_drops_for_chinese_questions() -> None:
    assert weights_for_lang("zh", 1.0, 1.0, {"zh": 0.2}) == {"dense": 0.2, "lexical": 1.0}
    assert weights_for_lang("en", 1.0, 1.0, {"zh": 0.2}) == {"dense": 1.0, "lexical": 1.0}
    # with a small dense weight a lexical top hit stays on top
    fused = rrf(
        {"dense": ["x", "y"], "lexical": ["y", "x"]}, weights_for_lang("zh", 1, 1, {"zh": 0.2})
    )
    assert fused[0][0] == "y"


def test_a_mapping_ranking_gives_tied_ids_the_same_share() -> None:
    fused = dict(rrf({"lexical": ["a", "b", "c"], "title": {"b": 1, "c": 1}}, {"title": 0.5}, k=10))
    assert fused["b"] == pytest.approx(1 / 12 + 0.5 / 11)
    assert fused["c"] == pytest.approx(1 / 13 + 0.5 / 11)
    assert fused["a"] == pytest.approx(1 / 11)


def test_a_named_document_lifts_its_passage_over_a_near_tie() -> None:
    rankings = {"lexical": ["other", "named"], "coverage": ["named", "other"]}
    assert rrf(rankings)[0][0] == "other"  # an exact tie, broken by the lexical rank
    rankings["title"] = {"named": 1}
    assert rrf(rankings, {"title": 0.3})[0][0] == "named"


def test_tied_ranks_are_dense_and_highest_first() -> None:
    assert tied_ranks({"a": 5, "b": 3, "c": 5}) == {"a": 1, "c": 1, "b": 2}
    assert tied_ranks({}) == {}


def test_score_fusion_lets_a_clear_winner_on_one_side_beat_a_narrow_lead() -> None:
    lexical = {"a": 10.0, "b": 9.5, "c": 2.0, "d": 1.5}  # a leads b by a hair
    dense = {"a": 0.32, "b": 0.80, "c": 0.31, "d": 0.29}  # b far ahead
    assert score_fuse({"lexical": lexical, "dense": dense})[0] == "b"
    # rank fusion calls it a tie, broken by the lexical rank
    ranks = {
        name: sorted(s, key=lambda c: -s[c]) for name, s in (("lexical", lexical), ("dense", dense))
    }
    assert rrf(ranks)[0][0] == "a"


def test_score_fusion_gives_an_unscored_candidate_the_lowest_score() -> None:
    fused = score_fuse({"lexical": {"a": 3.0, "b": 1.0}, "dense": {"c": 0.9, "a": 0.1}})
    # c scores lexical's lowest (1.0, b's), b dense's lowest (0.1, a's): b is last on both
    # sides; a and c each lead one side by as much and tie, in order of first appearance
    assert fused == ["a", "c", "b"]


def test_score_fusion_weight_zero_or_constant_scores_add_nothing() -> None:
    lexical = {"a": 1.0, "b": 3.0, "c": 2.0}
    assert score_fuse({"lexical": lexical, "dense": {"a": 0.9}}, {"dense": 0.0}) == ["b", "c", "a"]
    flat = {"a": 0.5, "b": 0.5, "c": 0.5}
    assert score_fuse({"lexical": lexical, "dense": flat}) == ["b", "c", "a"]
    assert score_fuse({}) == []
