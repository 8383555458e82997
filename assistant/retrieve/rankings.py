"""The rankings fused by RRF beside BM25's and the dense side's (`fuse.rrf`): each reorders, or
searches again from, the lexical candidates, and each is one function of one shape,
`ranking(snap, query, lexical) -> ids best first` (or `{id: rank}` where ids share a rank):

    by_coverage   the candidates by how much of the question each holds
    by_title      those of the documents whose title the question quotes, tied per document
    by_amount     those that state an amount in the unit the question asks for
    by_owner      every side's candidates of the documents of the organisation the question
                  names (owners.py), ranked by the retriever once the sides are in

`RANKINGS` names them for RRF and `ranking_weights` gives each its weight. `score_fused`
combines the lexical and dense candidates into one ranking by their scores instead of their
ranks (retrieve.fusion = "score"). `prefer_newest` sinks superseded versions in the fused list.

    query = Query("公司每周至少要让员工休息几天？", terms, allowed, candidates=50)
    lexical = [("c1", 9.0), ("c3", 8.0), ("c2", 7.0)]  # c3 "放假4天", c2 "每周至少休息一日"
    by_amount(snap, query, lexical) -> ["c3", "c2"]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from assistant.retrieve.asked_amount import expected_units, states_amount
from assistant.retrieve.fuse import DENSE, LEXICAL, score_fuse, tied_ranks
from assistant.retrieve.lexical import Weight
from assistant.retrieve.snapshot import Mask, Snapshot
from core.settings.retrieve import RetrieveSettings
from core.types import Passage

# (chunk id, score) pairs, best first: what BM25 and the dense side return.
Scored = Sequence[tuple[str, float]]
# Ids best first, or id -> rank where ids may share one (`fuse.rrf` takes both).
Ranking = list[str] | dict[str, int]

# A third ranking of the lexical candidates: by how many of the question's distinct terms (idf
# weighted) each holds. It lifts the passage that answers the whole question over one that
# repeats a single term.
COVERAGE = "coverage"
# A fourth: the lexical candidates from documents whose title the question quotes ("数据安全法
# 从什么时候开始施行？"), all of one document tied, the longest quote first.
TITLE = "title"
# A fifth: the lexical candidates that state an amount in the unit the question asks for
# ("休息几天" -> "每周至少休息一日"), in lexical order.
AMOUNT = "amount"
# A sixth: every side's candidates from the documents of the organisation the question names
# ("Does Sourcegraph match 401k contributions?": its handbook's, not another's), tied.
OWNER = "owner"


@dataclass(frozen=True)
class Query:
    """A question as the rankings read it."""

    text: str
    terms: Sequence[str]  # its BM25 terms (`lexical.tokenize_query`)
    allowed: Mask  # the snapshot's rows its asker may see
    candidates: int  # how many ids a search returns (retrieve.candidates)
    weight: Weight = None  # terms that weigh less than 1: those a follow-up's history supplied


def by_coverage(snap: Snapshot, query: Query, lexical: Scored) -> list[str]:
    """The lexical candidates by the summed idf of the question's distinct terms each holds,
    the most first; ties keep their lexical order."""
    rows = [snap.row_of[c] for c, _ in lexical]
    coverage = snap.bm25.coverage(query.terms, rows, query.weight)
    order = sorted(range(len(lexical)), key=lambda i: -coverage[i])
    return [lexical[i][0] for i in order]


def by_title(snap: Snapshot, query: Query, lexical: Scored) -> dict[str, int]:
    """The lexical candidates of the documents the question names, tied per document."""
    doc_of = {cid: snap.doc_ids[snap.row_of[cid]] for cid, _ in lexical}
    doc_rank = tied_ranks(snap.titles.named(query.text, among=set(doc_of.values())))
    return {cid: doc_rank[doc] for cid, doc in doc_of.items() if doc in doc_rank}


def by_amount(snap: Snapshot, query: Query, lexical: Scored) -> list[str]:
    """The lexical candidates that state an amount in a unit the question asks for, in
    lexical order; none when it asks for no amount."""
    units = expected_units(query.text)
    if not units:
        return []
    return [cid for cid, _ in lexical if states_amount(snap.texts[snap.row_of[cid]], units)]


def by_owner(snap: Snapshot, query: Query, candidates: Scored) -> dict[str, int]:
    """The candidates (of every side: the retriever ranks them once all are in) of the
    documents of the organisation the question names, tied."""
    named = snap.owners.named(query.text)
    return {cid: 0 for cid, _ in candidates if snap.doc_ids[snap.row_of[cid]] in named}


# The rankings beside the lexical and dense ones, in the order RRF adds up their votes.
RANKINGS: dict[str, Callable[[Snapshot, Query, Scored], Ranking]] = {
    COVERAGE: by_coverage,
    TITLE: by_title,
    AMOUNT: by_amount,
}


def ranking_weights(cfg: RetrieveSettings, lang: str) -> dict[str, float]:
    """Each of `RANKINGS`' RRF weight for a question in `lang` (a ranking weighing 0 has no
    vote, and is not built).

    ranking_weights(RetrieveSettings(), "en")
        -> {"coverage": 0.0, "title": 0.3, "amount": 0.5, "owner": 1.0}
    """
    return {
        COVERAGE: cfg.coverage_weight_en if lang == "en" else cfg.coverage_weight,
        TITLE: cfg.title_weight,
        AMOUNT: cfg.amount_weight,
        OWNER: cfg.owner_weight,
    }


def score_fused(
    snap: Snapshot,
    query_tokens: Sequence[str],
    lexical: Scored,
    dense: Scored,
    weights: dict[str, float],
    weight: Weight = None,
) -> list[str]:
    """The lexical and dense candidates as one ranking, by their weighted z-scores
    (`fuse.score_fuse`). Dense-only candidates get their BM25 score looked up; lexical-only
    ones the lowest similarity the dense side returned (they ranked below it)."""
    bm25 = dict(lexical)
    extra = [c for c, _ in dense if c not in bm25]
    scored = snap.bm25.scores_at(query_tokens, [snap.row_of[c] for c in extra], weight)
    bm25.update(zip(extra, (float(x) for x in scored), strict=True))
    return score_fuse({LEXICAL: bm25, DENSE: dict(dense)}, weights)


def prefer_newest(
    passages: list[Passage], question: str, superseded: dict[str, str]
) -> list[Passage]:
    """Superseded passages sink below current ones (their score halved) unless the question
    names their version (`superseded`: doc id -> its version, for the documents a newer one
    replaces)."""
    ranked: list[tuple[float, int, Passage]] = []
    for i, p in enumerate(passages):
        named = p.superseded and superseded.get(p.doc_id, "") in question
        demoted = p.superseded and not named
        score = p.score * 0.5 if demoted else p.score
        ranked.append((-score, i, replace(p, score=score) if demoted else p))
    return [p for _, _, p in sorted(ranked)]
