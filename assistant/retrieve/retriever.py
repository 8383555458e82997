"""Hybrid retrieval with access control: the question's nearest chunks by meaning (the dense
side, `dense.py`) and by BM25, over the live chunks its asker may see (`snapshot.py`), combined
by their standardised scores (retrieve.fusion), then fused by RRF with the coverage, title,
amount and feedback rankings of the lexical candidates (`rankings.py`); the best passages
reranked where a reranker is set, superseded versions sunk below current ones.

Both sides apply the asker's group mask before anything leaves this module: BM25 zeroes masked
rows before its top-k, the dense side keeps allowed rows only. The mask also leaves out the
documents not in force on the day of the question (its clock, `today`: core/policy_dates.py).
The dense side runs on a worker thread beside BM25, so a question waits only for what it takes
beyond the lexical side.

    retriever = Retriever(settings, store, reranker=None)
    retriever.retrieve("年假可以结转吗？", groups=["all"]).passages[0].file -> "员工手册.pdf"
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from assistant.answerable import read_evidence
from assistant.retrieve.crosslang.bridge import Bridge, BridgeRanking
from assistant.retrieve.crosslang.evidence import crosses, reads_across
from assistant.retrieve.crosslang.space import SPACE, Pending, SpaceMatch, SpaceSearch, reserved
from assistant.retrieve.dense import DenseSearch, Hits
from assistant.retrieve.fuse import DENSE, LEXICAL, rrf, weights_for_lang
from assistant.retrieve.keeper import SnapshotKeeper
from assistant.retrieve.lexical import load_synonyms, tokenize_query
from assistant.retrieve.rankings import (
    OWNER,
    RANKINGS,
    Query,
    Ranking,
    Scored,
    by_owner,
    prefer_newest,
    ranking_weights,
    score_fused,
)
from assistant.retrieve.snapshot import Mask, Snapshot
from core.config import Settings
from core.errors import ConfigError
from core.policy_dates import Today
from core.ports import Reranker
from core.text import detect_lang
from core.types import Passage
from store.store import Store

logger = logging.getLogger(__name__)

# How the lexical and dense candidates are combined (retrieve.fusion): by their ranks, each an
# RRF input, or by their standardised scores into one ranking (`rankings.score_fused`).
FUSIONS = ("rrf", "score")
# The RRF input of the question carried into the other language (`crosslang/bridge.py`).
BRIDGE = "carried"


@dataclass
class Retrieval:
    """Fused passages, best first, and what the retrievers saw (for abstention)."""

    passages: list[Passage]
    lang: str
    dense_top: float = 0.0
    lexical_top: float = 0.0
    # lexical_top / ln(1 + live chunks): idf, and so BM25, grows with the corpus; this scale
    # lets one abstention threshold serve a small handbook and a large library alike.
    lexical_scaled: float = 0.0
    # What the answerability model weighs (assistant/answerable.py).
    evidence: dict[str, float] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    # The bridge to the other language (crosslang/bridge.py): its gate's readings (empty:
    # none).
    bridge_gate: dict[str, float] = field(default_factory=dict)
    # The space's gate (crosslang/space.py): fired, best_other, best_same; {} when off.
    space_gate: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _Asked:
    """A question on its way through `Retriever.retrieve`: what each of its steps reads."""

    question: str
    text: str  # the question and a follow-up's context words: what the dense sides embed
    context: str
    lang: str
    groups: Sequence[str]
    day: date  # which documents are in force
    snap: Snapshot
    allowed: Mask  # the groups' passages in force on `day`
    spelt: Sequence[str]  # its misspelt words' terms as the library spells them (spelling.py)


class Retriever:
    """Retrieval over one store: its current snapshot, kept fresh, and the dense side's worker
    threads."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        reranker: Reranker | None = None,
        count_ahead: Callable[[Sequence[str]], object] | None = None,
        today: Today = date.today,
    ) -> None:
        self.settings = settings
        self.today = today  # the clock: which documents are in force (core/policy_dates.py)
        self.store = store
        self.reranker = reranker
        table = settings.retrieve.synonyms
        self.synonyms = load_synonyms(str(settings.base_dir / table) if table else "")
        if settings.retrieve.fusion not in FUSIONS:
            raise ConfigError(
                f"retrieve.fusion = {settings.retrieve.fusion!r}: use one of {', '.join(FUSIONS)}"
            )
        self.snapshots = SnapshotKeeper(store)
        # `count_ahead`: the token counter's `prime`, for the wait on the dense side
        self.dense = DenseSearch(store, count_ahead)
        # the question's words carried into the other language (crosslang/bridge.py)
        self.bridge = (
            Bridge(settings.retrieve, settings.base_dir, self.synonyms)
            if settings.retrieve.bilingual
            else None
        )
        self.space = SpaceSearch(store)  # the store's crosslang space, where it has one

    def snapshot(self) -> Snapshot:
        """The current snapshot (`SnapshotKeeper.current`)."""
        return self.snapshots.current()

    @property
    def generation(self) -> int:
        """The ledger generation of the current snapshot (-1 before the first)."""
        return self.snapshots.generation

    def refresh_every(self, seconds: float) -> Callable[[], None]:
        """Keep the snapshot fresh, each new one prepared, in a background thread
        (`SnapshotKeeper.refresh_every`); returns the function that stops it."""
        return self.snapshots.refresh_every(seconds, self.prepare)

    def prepare(self, snap: Snapshot) -> None:
        """Build what the snapshot's first questions would otherwise wait for: the dense side's
        and the space's vectors of a store held in memory, each passage's language, and the
        speller's words (~1.7 s at 10,000 documents). The refresher thread does it for each
        snapshot it builds; `snap.prepared` is set once done."""
        if snap.prepared.is_set():
            return
        started = time.perf_counter()
        self.dense.prepare(snap)
        self.space.prepare(snap)
        snap.speller.prepare()
        snap.prepared.set()
        logger.info("retrieval snapshot %d prepared in %.2f s", snap.generation,
                    time.perf_counter() - started)

    def retrieve(self, question: str, groups: Sequence[str], k: int | None = None,
                 context: str = "", only_lang: str | None = None) -> Retrieval:
        """The best `k` passages the groups may see, fused and version-aware. `context`: the
        words a follow-up's history supplies (assistant/followup.py), searched for beside the
        question's own, their BM25 terms weighing retrieve.history_weight. `only_lang` ("en",
        "zh"): passages in that language only."""
        cfg = self.settings.retrieve
        k = k or cfg.top_k
        t0 = time.perf_counter()
        asked = self._asked(question, groups, context, only_lang)
        weights = self._weights(asked.lang)
        pending = None
        if weights[DENSE] > 0:
            pending = self.dense.start(asked.snap, asked.text, asked.allowed, cfg.candidates)
        space_pending = self.space.start(asked.snap, asked.text, asked.lang, asked.allowed)
        query, lexical = self._lexical(asked)
        t1 = time.perf_counter()
        more = {n: rank(asked.snap, query, lexical) for n, rank in RANKINGS.items()
                if weights[n] > 0}
        # the bridge waits for the space's gap where that gap gates it
        gated = cfg.bilingual_dense_gate and space_pending is not None
        bridge = None if gated else self._bridge(asked, lexical)
        t2 = time.perf_counter()
        dense, dense_ms = self.dense.wait(pending, asked.snap, lexical) if pending else ([], {})
        t3 = time.perf_counter()
        match, bridge = self._across(asked, space_pending, gated, bridge, lexical, more, weights)
        crossed = time.perf_counter()
        passages = self._passages(asked, query, lexical, dense, more, weights, match, k)
        t4 = time.perf_counter()
        found = self._final(asked, passages, k, lexical, dense, bridge, match)
        found.timings_ms = {
            "lexical": (t1 - t0) * 1000,  # the snapshot, the mask and BM25
            "lexical_more": (t2 - t1) * 1000,  # the other rankings, beside the dense side
            "dense": (t3 - t2) * 1000,  # the wait for the dense side, which ran beside them
            **dense_ms,  # what the dense side itself took: question embedding, search
            "crosslang": (crossed - t3) * 1000,  # the wait for the space beyond it, the bridge
            **match.timings_ms,  # what the space itself took
            "rerank": (time.perf_counter() - t4) * 1000,
            "retrieve": (time.perf_counter() - t0) * 1000,
        }
        if space_pending:
            found.space_gate = {"fired": float(match.fired), "best_other": match.best_other,
                                "best_same": match.best_same}
        return found

    # --- the steps of `retrieve` -------------------------------------------------------------
    def _asked(self, question: str, groups: Sequence[str], context: str,
               only_lang: str | None = None) -> _Asked:
        """The question, over the current snapshot and today's mask of the groups (narrowed to
        `only_lang`'s passages where it is given)."""
        snap = self.snapshot()
        day = self.today()
        allowed = snap.allowed(groups, day)
        if only_lang:
            allowed = allowed & self.space.own_language(snap, only_lang)
        text = f"{question} {context}" if context else question
        spelt = snap.speller.terms(question) if self.settings.retrieve.spelling else []
        return _Asked(question, text, context, detect_lang(question), groups, day, snap, allowed,
                      spelt)

    def _lexical(self, asked: _Asked) -> tuple[Query, Scored]:
        """The question's BM25 terms (its misspelt words as the library spells them, a
        follow-up's context words weighing retrieve.history_weight) and their best candidates."""
        cfg = self.settings.retrieve
        terms = tokenize_query(asked.question, synonyms=self.synonyms)
        terms += [t for t in asked.spelt if t not in terms]
        weight: dict[str, float] | None = None
        if asked.context:
            supplied = [t for t in tokenize_query(asked.context, synonyms=self.synonyms)
                        if t not in terms]
            weight = dict.fromkeys(supplied, cfg.history_weight)
            terms = terms + supplied
        query = Query(asked.text, terms, asked.allowed, cfg.candidates, weight)
        return query, asked.snap.bm25.search(terms, cfg.candidates, asked.allowed, weight)

    def _across(self, asked: _Asked, pending: Pending | None, gated: bool,
                bridge: BridgeRanking | None, lexical: Scored, more: dict[str, Ranking],
                weights: dict[str, float]) -> tuple[SpaceMatch, BridgeRanking | None]:
        """The other language's rankings: the space's match (waited for) and the bridge (ranked
        now where the space's gap gates it), each added to `more` and `weights` when it found
        something."""
        cfg = self.settings.retrieve
        match = self.space.wait(pending, cfg.crosslang_margin, cfg.candidates, cfg.owner_gate,
                                cfg.crosslang_reserve) if pending else SpaceMatch()
        if match.hits:
            more[SPACE] = [c for c, _ in match.hits]
            weights[SPACE] = cfg.crosslang_weight
        if gated:
            gap = match.best_other - match.best_same if match.best_other else None
            bridge = self._bridge(asked, lexical, gap)
        if bridge is not None:
            more[BRIDGE] = bridge.ranking
            weights[BRIDGE] = bridge.weight
        return match, bridge

    def _bridge(self, asked: _Asked, lexical: Scored,
                gap: float | None = None) -> BridgeRanking | None:
        """The question carried into the other language and searched (None: off, or nothing
        of it translates, and the old path is taken); `gap`: the space's reading for its gate
        (retrieve.bilingual_dense_gate)."""
        if self.bridge is None:
            return None
        return self.bridge.rank(asked.snap.bm25, asked.question, asked.lang, asked.allowed,
                                lexical, gap)

    def _passages(self, asked: _Asked, query: Query, lexical: Scored, dense: Hits,
                  more: dict[str, Ranking], weights: dict[str, float], match: SpaceMatch,
                  k: int) -> list[Passage]:
        """The passages of the best fused candidates: the other language's (when the space let
        them in) ranked by the sides that read them, not the dense side; the owner's by all."""
        snap = asked.snap
        if match.hits:
            own = self.space.own_language(snap, asked.lang)
            dense = [(c, s) for c, s in dense if own[snap.row_of[c]]]
        more[OWNER] = by_owner(snap, query, [*lexical, *dense, *match.hits])  # weight 0: no vote
        fused = self._fuse(snap, query, lexical, dense, more, weights)
        return self._candidates(snap, fused, asked.groups, k, asked.day)

    def _final(self, asked: _Asked, passages: list[Passage], k: int, lexical: Scored,
               dense: Hits, bridge: BridgeRanking | None, match: SpaceMatch) -> Retrieval:
        """The best `k` passages, reranked where a reranker is set and superseded versions sunk,
        with the evidence the answerability model weighs (`crosslang/evidence.py`)."""
        if self.reranker is not None:
            passages = self.reranker.rerank(asked.text, passages)
        superseded = asked.snap.superseded_for(asked.groups, asked.day)
        snap, cfg = asked.snap, self.settings.retrieve
        passages = reserved(prefer_newest(passages, asked.text, superseded), match.best,
                            cfg.crosslang_place,
                            lambda c, s: snap.passage(snap.row_of[c], s, asked.groups, asked.day))
        carried = bridge.terms if bridge is not None and cfg.bilingual_evidence else []
        found = self._found(asked, passages[:k], lexical, dense, carried)
        if not carried and match.fired and self.bridge is not None and reads_across(
                self.settings, asked.lang, found.evidence,
                crosses(self.space.own_language(snap, asked.lang), snap, passages)):
            carried = self.bridge.carried_terms(asked.question, asked.lang)  # [] nothing carried
            found = self._found(asked, passages[:k], lexical, dense, carried) if carried else found
        found.bridge_gate = bridge.gate if bridge is not None else {}
        return found

    def _weights(self, lang: str) -> dict[str, float]:
        """Each ranking's RRF weight for a question in `lang`; the dense side weighs nothing
        for a language the embedder does not read (embed.languages)."""
        cfg = self.settings.retrieve
        unread = {x: 0.0 for x in ("en", "zh") if x not in self.settings.embed.languages}
        dense_and_lexical = weights_for_lang(lang, cfg.dense_weight, cfg.lexical_weight, unread)
        return {**dense_and_lexical, **ranking_weights(cfg, lang)}

    def _fuse(self, snap: Snapshot, query: Query, lexical: Scored, dense: Hits,
              more: dict[str, Ranking], weights: dict[str, float]) -> list[tuple[str, float]]:
        """Every ranking fused by RRF, best first. With retrieve.fusion = "score" the lexical
        and dense candidates enter as one ranking by their scores, weighing what the two did."""
        by_lexical = [c for c, _ in lexical]
        if self.settings.retrieve.fusion == "score" and dense and weights[DENSE] > 0:
            by_lexical = score_fused(snap, query.terms, lexical, dense, weights, query.weight)
            weights = {**weights, LEXICAL: weights[LEXICAL] + weights[DENSE], DENSE: 0.0}
        rankings: dict[str, Ranking] = {LEXICAL: by_lexical, DENSE: [c for c, _ in dense], **more}
        return rrf(rankings, weights, self.settings.retrieve.rrf_k)

    def _candidates(
        self,
        snap: Snapshot,
        fused: list[tuple[str, float]],
        groups: Sequence[str],
        k: int,
        day: date,
    ) -> list[Passage]:
        """The passages of the best fused ids: the best `k`, or three times as many for the
        reranker to reorder or for demoted passages to give way to."""
        superseded = snap.superseded_for(groups, day)
        shown = fused[: k * 3]
        if self.reranker is None and not any(
            snap.doc_ids[snap.row_of[cid]] in superseded for cid, _ in fused[:k]
        ):
            shown = fused[:k]  # nothing of the best k sinks: the rest stays below them
        return [snap.passage(snap.row_of[cid], score, groups, day) for cid, score in shown]

    @staticmethod
    def _found(asked: _Asked, passages: list[Passage], lexical: Scored, dense: Hits,
               carried: Sequence[str] = ()) -> Retrieval:
        """The retrieval of these passages, with the evidence the answerability model weighs
        (`read_evidence`: of its own terms and the library's spelling of its misspelt words,
        `_Asked.spelt`, or of the `carried` ones where those find more)."""
        snap, question, lang = asked.snap, asked.text, asked.lang
        dense_top = dense[0][1] if dense else 0.0
        lexical_scaled = (lexical[0][1] / math.log1p(len(snap.ids))) if lexical else 0.0
        rows = [snap.row_of[p.chunk_id] for p in passages]
        own = [*tokenize_query(question, synonyms=False), *asked.spelt] if asked.spelt else None
        evidence = read_evidence(question, passages, snap.bm25, rows, dense_top, lexical_scaled,
                                 carried, own)
        return Retrieval(
            passages=passages,
            lang=lang,
            dense_top=dense_top,
            lexical_top=lexical[0][1] if lexical else 0.0,
            lexical_scaled=lexical_scaled,
            evidence=evidence,
        )
