"""Weighted reciprocal rank fusion of several rankings of chunk ids.

Each retriever contributes `weight / (k + rank)` (rank from 1) for every id it ranks. Equal
fused scores are broken by the rank in the tie-break ranking ("lexical" by default: BM25 ranks
mean something in every language, dense ones may not), then by id, so ties never drift to one
retriever by accident of dict order.

A ranking is either a list of ids, best first, or a mapping `id -> rank` where ids may share a
rank (all passages of a document the question names rank first together); `tied_ranks` builds
one from scores.

Two retrievers that give comparable scores (BM25, cosine similarity) can instead be combined
by those scores before RRF: `score_fuse` adds each one's z-scores over their candidates, so a
clear lead on one side outweighs a narrow one on the other (retrieve.fusion = "score").

    rrf({"lexical": ["a", "b"], "dense": ["b", "a"]}, k=60) -> [("a", 0.0325...), ("b", 0.0325...)]
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

LEXICAL = "lexical"
DENSE = "dense"


def rrf(
    rankings: Mapping[str, Sequence[str] | Mapping[str, int]],
    weights: Mapping[str, float] | None = None,
    k: int = 60,
    tie_break: str = LEXICAL,
) -> list[tuple[str, float]]:
    """Fuse `rankings` (name -> ids, best first) into `(id, score)` pairs, best first.

    A retriever missing from `weights` weighs 1.0; a weight of 0 leaves its ids in the result
    only if another retriever ranks them. An id repeated in one ranking counts at its best rank.
    A mapping ranking gives each id its rank (from 1) directly; ids may share one.

    rrf({"lexical": ["a"], "dense": ["b"]}, {"dense": 0.2}) -> [("a", 0.016...), ("b", 0.003...)]
    """
    if k < 0:
        raise ValueError(f"RRF constant k must be >= 0, got {k}")
    scores: dict[str, float] = {}
    for name, ranking in rankings.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        ranked = ranking.items() if isinstance(ranking, Mapping) else _first_ranks(ranking)
        for cid, rank in ranked:
            if w > 0:
                scores[cid] = scores.get(cid, 0.0) + w / (k + rank)
            else:
                scores.setdefault(cid, 0.0)
    tie_ranking = rankings.get(tie_break, ())
    primary = (
        dict(tie_ranking)
        if isinstance(tie_ranking, Mapping)
        else {cid: r for cid, r in _first_ranks(tie_ranking)}
    )
    unranked = max(primary.values(), default=0) + 1
    # A weight-0 retriever's ids with no other vote stay out.
    voted = {cid: s for cid, s in scores.items() if s > 0}
    order = sorted(voted, key=lambda c: (-round(voted[c], 12), primary.get(c, unranked), c))
    return [(cid, voted[cid]) for cid in order]


def _first_ranks(ranking: Sequence[str]) -> list[tuple[str, int]]:
    """Each id once, at its best (1-based) rank.

    _first_ranks(["a", "a", "b"]) -> [("a", 1), ("b", 3)]
    """
    seen: dict[str, int] = {}
    for rank, cid in enumerate(ranking, start=1):
        seen.setdefault(cid, rank)
    return list(seen.items())


def tied_ranks(values: Mapping[K, float]) -> dict[K, int]:
    """Dense ranks of `values`, highest first; equal values share a rank.

    tied_ranks({"a": 5, "b": 3, "c": 5}) -> {"a": 1, "c": 1, "b": 2}
    """
    order = {v: r for r, v in enumerate(sorted(set(values.values()), reverse=True), start=1)}
    return {key: order[v] for key, v in sorted(values.items(), key=lambda kv: -kv[1])}


def weights_for_lang(
    lang: str,
    dense_weight: float,
    lexical_weight: float,
    dense_weight_by_lang: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """RRF weights for a question in `lang`: the dense weight is replaced by the per-language
    one where given (an English-only embedder means little for Chinese questions).

    weights_for_lang("zh", 1.0, 1.0, {"zh": 0.2}) -> {"dense": 0.2, "lexical": 1.0}
    """
    dense = dense_weight
    if dense_weight_by_lang and lang in dense_weight_by_lang:
        dense = dense_weight_by_lang[lang]
    return {DENSE: dense, LEXICAL: lexical_weight}


def score_fuse(
    scores: Mapping[str, Mapping[str, float]], weights: Mapping[str, float] | None = None
) -> list[str]:
    """The union of the retrievers' candidates (name -> {id: score}), best first, by the
    weighted sum of each retriever's scores standardised over that union (mean 0, spread 1), so
    a BM25 score and a cosine similarity add up on one scale and a clear winner on one side
    counts more than a rank. A candidate a retriever did not score gets that retriever's
    lowest score; a retriever whose scores are all equal adds nothing. Ties keep the order of
    first appearance (the first retriever's candidates first).

    score_fuse({"lexical": {"a": 9.0, "b": 1.0, "c": 5.0}, "dense": {"b": 0.9, "d": 0.5}})
        -> ["b", "a", "c", "d"]
    """
    ids = list(dict.fromkeys(cid for ranked in scores.values() for cid in ranked))
    total = dict.fromkeys(ids, 0.0)
    for name, ranked in scores.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        if w <= 0 or not ranked:
            continue
        floor = min(ranked.values())
        values = [ranked.get(cid, floor) for cid in ids]
        mean = sum(values) / len(values)
        spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        if spread > 0:
            for cid, v in zip(ids, values, strict=True):
                total[cid] += w * (v - mean) / spread
    order = {cid: i for i, cid in enumerate(ids)}
    return sorted(ids, key=lambda c: (-round(total[c], 12), order[c]))
