"""Hybrid retrieval with access control: dense (Chroma) + lexical (BM25), combined by their
standardised scores (`retrieve.fusion`), then fused by RRF with the coverage, title and amount
rankings.

Access control and liveness are one boolean mask over the live chunks (the ledger's `chunks`
table), built per set of groups and cached per ledger generation. Both retrievers apply it
before anything leaves this module: BM25 zeroes masked rows before its top-k; the dense side
over-fetches from Chroma unfiltered (fast) and keeps allowed live rows, or, for a user who may
see a small share of the corpus, searches exactly over just the vectors that user may see
(Chroma's own metadata filter costs 10-100 times more; bench/retrieve_latency.py).

    retriever = Retriever(settings, store, reranker=None)
    retriever.retrieve("年假可以结转吗？", groups=["all"]).passages[0].file -> "员工手册.pdf"
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from assistant.answerable import features
from assistant.pack import render_passages
from assistant.retrieve.asked_amount import expected_units, states_amount
from assistant.retrieve.fuse import DENSE, LEXICAL, rrf, score_fuse, tied_ranks, weights_for_lang
from assistant.retrieve.lexical import BM25Index, TitleIndex, load_synonyms, tokenize_query
from assistant.retrieve.query_expansion import feedback_terms
from core.config import Settings
from core.errors import ConfigError
from core.ports import Reranker
from core.text import detect_lang
from core.types import DocRecord, Passage
from store.store import Store

logger = logging.getLogger(__name__)

Mask = npt.NDArray[np.bool_]
OVERFETCH = 4
# A third ranking of the lexical candidates: by how many of the question's distinct terms (idf
# weighted) each holds. It lifts the passage that answers the whole question over one that
# repeats a single term.
COVERAGE = "coverage"
# Below this share of visible chunks the dense side searches the visible vectors exactly,
EXACT_BELOW = 0.3
# unless they are more than this many (a tenth of a million chunks: 154 MB of float32 to read
# per question, 30 ms on the 2-core machine); then Chroma is asked for enough candidates that
# `n` survive the group mask (n * SURVIVE_MARGIN / share), up to MAX_FETCH of them.
EXACT_UP_TO = 50_000
SURVIVE_MARGIN = 1.5
MAX_FETCH = 1000
# A store of at most this many live chunks is searched exactly whatever share the user sees:
# its visible vectors, held in memory per group set, take less than Chroma's HNSW query (one
# thread, 2-core machine: 0.03 ms at 600 vectors, 0.65 ms at 10,000; Chroma 1.7-2.0 ms on the
# 600-chunk sample store in bench/overhead.py), and exact is at least as accurate as HNSW. But
# they are fetched from Chroma again for each new snapshot (after every write), on the first
# question of each group set: 0.03-0.1 s for 600-2,000 vectors, 0.3 s for 5,000, 1.8 s for
# 20,000 (load ~2). Larger stores keep Chroma.
EXACT_STORE_UP_TO = 2_000
# A fourth: the lexical candidates from documents whose title the question quotes ("数据安全法
# 从什么时候开始施行？"), all of one document tied, the longest quote first.
TITLE = "title"
# A fifth: the lexical candidates that state an amount in the unit the question asks for
# ("休息几天" -> "每周至少休息一日"), in lexical order.
AMOUNT = "amount"
# A sixth: BM25 again, the question plus the terms its top lexical passages share
# (assistant/retrieve/query_expansion.py), for questions worded unlike their passage.
FEEDBACK = "feedback"
FEEDBACK_PASSAGES = 3
FEEDBACK_TERMS = 8
# How the lexical and dense candidates are combined (retrieve.fusion): by their ranks, each an
# RRF input, or by their standardised scores into one ranking (`_score_fused`).
FUSIONS = ("rrf", "score")
# Threads that embed questions and search Chroma beside the BM25 scoring (one per question in
# flight; the app answers a few at a time).
DENSE_WORKERS = 4
# Lexical candidates whose blocks are counted ahead while the dense side runs (`count_ahead`).
COUNT_AHEAD = 30
# At most this long the question's thread waits for the dense side's thread to start
# (`_dense_async`; longer only when every worker is busy).
DENSE_START_WAIT_S = 0.05


_blas: Any = None


@contextmanager
def _one_blas_thread() -> Iterator[None]:
    """BLAS on one thread for the block: a matrix-vector product over the visible vectors is
    too small to share, and on a busy 2-core machine waiting for a second thread cost 30 ms
    where one thread took 1 ms (10,000 vectors; bench/retrieve_latency.py)."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController()
    with _blas.limit(limits=1, user_api="blas"):
        yield


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


class Snapshot:
    """The live chunks as of one ledger generation, with their BM25 index and group masks."""

    def __init__(self, store: Store) -> None:
        ledger = store.ledger
        self.generation = ledger.generation()
        self.collection = store.collection
        self.docs: dict[str, DocRecord] = {r.meta.id: r for r in ledger.documents()}
        # The columns of every live chunk, read from the ledger in batches while the BM25 index
        # is built from the same stream: a million chunks' token lists never sit in memory.
        self.ids: list[str] = []
        self.doc_ids: list[str] = []
        self.ordinals: list[int] = []
        self.texts: list[str] = []
        self.sections: list[tuple[str, ...]] = []
        self.pages: list[tuple[int | None, int | None]] = []
        # Each row's document as a number (len(docs) for one the ledger no longer lists), so a
        # group set's mask is one lookup per document, then one vectorised gather.
        self._doc_numbers = {doc_id: i for i, doc_id in enumerate(self.docs)}
        doc_index: list[npt.NDArray[np.int32]] = []

        def rows() -> Iterator[tuple[str, list[str]]]:
            missing = len(self._doc_numbers)
            for batch in ledger.chunk_batches():
                self.ids += batch.ids
                self.doc_ids += batch.doc_ids
                self.ordinals += batch.ordinals
                self.texts += batch.texts
                self.sections += batch.sections
                self.pages += batch.pages
                numbers = self._doc_numbers
                doc_index.append(
                    np.fromiter(
                        (numbers.get(d, missing) for d in batch.doc_ids),
                        dtype=np.int32,
                        count=len(batch.doc_ids),
                    )
                )
                yield from zip(batch.ids, batch.tokens, strict=True)

        self.bm25 = BM25Index.build(rows())
        self._doc_index = np.concatenate(doc_index) if doc_index else np.zeros(0, np.int32)
        self.row_of = {cid: i for i, cid in enumerate(self.ids)}
        self.superseded = self._superseded(self.docs.values())
        self._superseded_for: dict[frozenset[str], dict[str, str]] = {}
        self.titles = TitleIndex({doc_id: r.meta.title for doc_id, r in self.docs.items()})
        self._masks: dict[frozenset[str], Mask] = {}
        self._vectors: dict[bytes, tuple[list[str], npt.NDArray[np.float32]]] = {}

    @staticmethod
    def _superseded(records: Iterable[DocRecord]) -> dict[str, str]:
        """doc id -> version string, for documents that a newer one of their series replaces."""
        records = list(records)
        newest: dict[str, tuple[str, str]] = {}
        for record in records:
            meta = record.meta
            if meta.series:
                key = (meta.effective_date, meta.version)
                if meta.series not in newest or key > newest[meta.series]:
                    newest[meta.series] = key
        return {
            r.meta.id: r.meta.version or r.meta.effective_date
            for r in records
            if r.meta.series and (r.meta.effective_date, r.meta.version) < newest[r.meta.series]
        }

    def superseded_for(self, groups: Sequence[str]) -> dict[str, str]:
        """`superseded` among the documents these groups see: a newer version the asker may
        not see neither marks nor demotes the one they may."""
        key = frozenset(groups)
        if key not in self._superseded_for:
            self._superseded_for[key] = self._superseded(
                r for r in self.docs.values() if r.searchable and key & set(r.meta.groups)
            )
        return self._superseded_for[key]

    def allowed(self, groups: Sequence[str]) -> Mask:
        key = frozenset(groups)
        if key not in self._masks:
            visible = np.fromiter(
                (r.searchable and bool(key & set(r.meta.groups)) for r in self.docs.values()),
                dtype=bool,
                count=len(self.docs),
            )
            self._masks[key] = np.append(visible, False)[self._doc_index]
        return self._masks[key]

    def visible_vectors(
        self, allowed: Mask, store: Store
    ) -> tuple[list[str], npt.NDArray[np.float32]]:
        """The ids and vectors of the allowed rows, fetched from Chroma once per mask."""
        key = np.packbits(allowed).tobytes()
        if key not in self._vectors:
            ids = [self.ids[i] for i in np.flatnonzero(allowed)]
            self._vectors[key] = (ids, store.vectors.vectors(self.collection, ids))
        return self._vectors[key]

    def passage(self, row: int, score: float = 0.0, groups: Sequence[str] | None = None) -> Passage:
        """The passage of a row; `superseded` as the `groups` see it (all groups: None)."""
        record = self.docs[self.doc_ids[row]]
        superseded = self.superseded if groups is None else self.superseded_for(groups)
        page, page_end = self.pages[row]
        return Passage(
            chunk_id=self.ids[row],
            doc_id=record.meta.id,
            file=record.meta.path,
            text=self.texts[row],
            section=self.sections[row],
            page=page,
            page_end=page_end,
            page_labels=record.meta.page_labels,
            ocr_pages=record.meta.ocr_pages,
            score=score,
            title=record.meta.title,
            superseded=record.meta.id in superseded,
            groups=record.meta.groups,
            ordinal=self.ordinals[row],
        )


def _by_title(
    snap: Snapshot, question: str, lexical: Sequence[tuple[str, float]]
) -> dict[str, int]:
    """The lexical candidates of the documents the question names, tied per document."""
    doc_of = {cid: snap.doc_ids[snap.row_of[cid]] for cid, _ in lexical}
    doc_rank = tied_ranks(snap.titles.named(question, among=set(doc_of.values())))
    return {cid: doc_rank[doc] for cid, doc in doc_of.items() if doc in doc_rank}


def _score_fused(
    snap: Snapshot,
    query_tokens: Sequence[str],
    lexical: Sequence[tuple[str, float]],
    dense: Sequence[tuple[str, float]],
    weights: dict[str, float],
) -> list[str]:
    """The lexical and dense candidates as one ranking, by their weighted z-scores
    (`fuse.score_fuse`). Dense-only candidates get their BM25 score looked up; lexical-only
    ones the lowest similarity the dense side returned (they ranked below it)."""
    bm25 = dict(lexical)
    extra = [c for c, _ in dense if c not in bm25]
    scored = snap.bm25.scores_at(query_tokens, [snap.row_of[c] for c in extra])
    bm25.update(zip(extra, (float(x) for x in scored), strict=True))
    return score_fuse({LEXICAL: bm25, DENSE: dict(dense)}, weights)


def _by_amount(snap: Snapshot, question: str, lexical: Sequence[tuple[str, float]]) -> list[str]:
    """The lexical candidates that state an amount in a unit the question asks for, in
    lexical order; none when it asks for no amount."""
    units = expected_units(question)
    if not units:
        return []
    return [cid for cid, _ in lexical if states_amount(snap.texts[snap.row_of[cid]], units)]


class Retriever:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        reranker: Reranker | None = None,
        count_ahead: Callable[[Sequence[str]], object] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.reranker = reranker
        # The token counter's `prime`, for the wait on the dense side (`_count_ahead`).
        self.count_ahead = count_ahead
        table = settings.retrieve.synonyms
        self.synonyms = load_synonyms(str(settings.base_dir / table) if table else "")
        if settings.retrieve.fusion not in FUSIONS:
            raise ConfigError(
                f"retrieve.fusion = {settings.retrieve.fusion!r}: use one of {', '.join(FUSIONS)}"
            )
        self._snapshot: Snapshot | None = None
        self._building = threading.Lock()
        self._seen_writes = -1
        self._refresher: threading.Thread | None = None
        self._workers: ThreadPoolExecutor | None = None
        self._starting = threading.Lock()

    def snapshot(self) -> Snapshot:
        """The current snapshot. Without a refresher thread the ledger's generation is read on
        every call and the snapshot rebuilt when it moved; with one (`refresh_every`, the app),
        the thread keeps it fresh and a call reads nothing, unless this process wrote to the
        store since (then it waits for the rebuild: an upload is answerable at once)."""
        snap = self._snapshot
        if snap is not None and self._refresher is not None and (
            self.store.writes == self._seen_writes
        ):
            return snap
        return self.refresh()

    @property
    def generation(self) -> int:
        """The ledger generation of the current snapshot (-1 before the first)."""
        snap = self._snapshot
        return snap.generation if snap is not None else -1

    def refresh(self) -> Snapshot:
        """Rebuild the snapshot if the ledger's generation moved; one builder at a time."""
        with self._building:
            writes = self.store.writes
            if (
                self._snapshot is None
                or self._snapshot.generation != self.store.ledger.generation()
            ):
                self.store.ledger.check_text_version()
                started = time.perf_counter()
                self._snapshot = Snapshot(self.store)
                logger.info(
                    "retrieval snapshot: generation %d, %d chunks in %.2f s",
                    self._snapshot.generation,
                    len(self._snapshot.ids),
                    time.perf_counter() - started,
                )
            self._seen_writes = writes
            return self._snapshot

    def refresh_every(self, seconds: float) -> Callable[[], None]:
        """Read the ledger's generation every `seconds` in a background thread and rebuild the
        snapshot when it moved, so a document another process ingested is answerable here
        within `seconds` plus the rebuild time, and no question waits for a rebuild. Returns
        the function that stops the thread."""
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(seconds):
                try:
                    self.refresh()
                except Exception as exc:  # noqa: BLE001  (a ledger hiccup: try again later)
                    logger.warning("retrieval snapshot not refreshed: %s", exc)

        self._refresher = threading.Thread(target=run, name="snapshot-refresh", daemon=True)
        self._refresher.start()

        def halt() -> None:
            stop.set()
            if self._refresher is not None:
                self._refresher.join(timeout=seconds + 30)
            self._refresher = None

        return halt

    def _dense_timed(
        self, snap: Snapshot, question: str, allowed: Mask, n: int, started: threading.Event
    ) -> tuple[list[tuple[str, float]], dict[str, float]]:
        """`_dense`, with the milliseconds its two steps took: "dense_embed" (the question's
        vector) and "dense_search" (the nearest allowed chunks). Sets `started` first."""
        started.set()
        t0 = time.perf_counter()
        vector = self.store.question_vector(question)
        t1 = time.perf_counter()
        hits = self._dense(snap, vector, allowed, n)
        t2 = time.perf_counter()
        return hits, {"dense_embed": (t1 - t0) * 1000, "dense_search": (t2 - t1) * 1000}

    def _dense_async(
        self, snap: Snapshot, question: str, allowed: Mask, n: int
    ) -> Future[tuple[list[tuple[str, float]], dict[str, float]]]:
        """`_dense_timed` on a worker thread: the question is embedded while this thread scores
        BM25 (the embedding model and numpy's large operations release the interpreter lock),
        so the dense side costs a question only what it takes beyond the lexical side.

        It returns once the worker has started: a worker woken while this thread runs Python
        waits for the interpreter lock until this thread waits too, and the embedding then
        ran after BM25 rather than beside it (English questions on the sample store, without
        the model server: the wait for the dense side 6.5 -> 4.5 ms p50; in the benches with
        the server, no difference beyond their noise: docs/benchmarks-history.md, issue 12 fifth
        pass).
        Chroma's query and the embedding each give up and take back the interpreter lock
        more than once a call, so pure Python on this thread slows them (at 1M chunks a k=200
        query took 3.0 ms alone, 14.6 beside a thread running Python, 3.1 beside numpy; the
        embedding 2.2 and 17.8 ms; docs/benchmarks-history.md, issue 12 sixth pass)."""
        with self._starting:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(
                    max_workers=DENSE_WORKERS, thread_name_prefix="dense"
                )
        started = threading.Event()
        pending = self._workers.submit(self._dense_timed, snap, question, allowed, n, started)
        started.wait(DENSE_START_WAIT_S)
        return pending

    def _count_ahead(
        self, pending: Future[Any], snap: Snapshot, lexical: Sequence[tuple[str, float]]
    ) -> None:
        """While the dense side is still running, hand the best lexical candidates' blocks (as
        packing renders them: first, or later in the block) to `count_ahead`: most of them are
        packed next, and in a large library their lines are new to the counter (counting them
        was most of packing's time at a million chunks). It stops as soon as the dense side is
        done, so the question waits for none of it; counts are the same either way."""
        if self.count_ahead is None:
            return
        for cid, _ in lexical[:COUNT_AHEAD]:
            if pending.done():
                return
            p = snap.passage(snap.row_of[cid])
            self.count_ahead([render_passages([p, p])])

    def _dense(
        self, snap: Snapshot, vector: npt.NDArray[np.float32], allowed: Mask, n: int
    ) -> list[tuple[str, float]]:
        """The `n` nearest allowed live chunks to the question's `vector`. Most users see
        most of the corpus: Chroma's unfiltered index is asked for a few times `n` and the
        allowed ones kept. A small store (EXACT_STORE_UP_TO), a user who sees a small share of
        a corpus of fewer than EXACT_UP_TO vectors, or too few surviving get an exact search
        over just the vectors they may see, held in memory per group set (Chroma's metadata
        filter costs far more). A small share of a large corpus
        is still many vectors: from EXACT_UP_TO of them Chroma is asked for enough that `n`
        survive the mask (n * SURVIVE_MARGIN / share, at most MAX_FETCH), the exact search
        only if too few do."""
        visible = int(allowed.sum())
        if not visible:
            return []
        share = visible / len(allowed)
        small = len(allowed) <= EXACT_STORE_UP_TO
        if not small and (share >= EXACT_BELOW or visible > EXACT_UP_TO):
            fetch = max(n * OVERFETCH, math.ceil(n * SURVIVE_MARGIN / share))
            if fetch <= MAX_FETCH:
                hits = self.store.vectors.query(snap.collection, vector, fetch)
                row_of = snap.row_of
                kept = [(c, s) for c, s in hits if c in row_of and allowed[row_of[c]]]
                if len(kept) >= n or len(kept) == visible or len(hits) < fetch:
                    return kept[:n]
        ids, matrix = snap.visible_vectors(allowed, self.store)
        with _one_blas_thread():
            scores = matrix @ vector
        top = np.argpartition(-scores, min(n, len(ids)) - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(ids[i], float(scores[i])) for i in top]

    def retrieve(self, question: str, groups: Sequence[str], k: int | None = None) -> Retrieval:
        """The best `k` passages the groups may see, fused and version-aware."""
        cfg = self.settings.retrieve
        k = k or cfg.top_k
        t0 = time.perf_counter()
        snap = self.snapshot()
        allowed = snap.allowed(groups)
        lang = detect_lang(question)
        unread = {x: 0.0 for x in ("en", "zh") if x not in self.settings.embed.languages}
        weights = weights_for_lang(lang, cfg.dense_weight, cfg.lexical_weight, unread)
        pending = (
            self._dense_async(snap, question, allowed, cfg.candidates)
            if weights[DENSE] > 0
            else None
        )
        query_tokens = tokenize_query(question, synonyms=self.synonyms)
        lexical = snap.bm25.search(query_tokens, cfg.candidates, allowed)
        t1 = time.perf_counter()
        lexical_rows = [snap.row_of[c] for c, _ in lexical]
        coverage = snap.bm25.coverage(query_tokens, lexical_rows)
        order = sorted(range(len(lexical)), key=lambda i: -coverage[i])
        by_coverage = [lexical[i][0] for i in order]
        weights[COVERAGE] = cfg.coverage_weight_en if lang == "en" else cfg.coverage_weight
        weights[TITLE] = cfg.title_weight
        weights[AMOUNT] = cfg.amount_weight
        weights[FEEDBACK] = cfg.feedback_weight
        by_feedback: list[str] = []
        if cfg.feedback_weight > 0 and lexical:
            texts = [snap.texts[snap.row_of[c]] for c, _ in lexical[:FEEDBACK_PASSAGES]]
            extra = feedback_terms(query_tokens, texts, snap.bm25.idf, FEEDBACK_TERMS)
            expanded = [*query_tokens, *extra]
            by_feedback = [c for c, _ in snap.bm25.search(expanded, cfg.candidates, allowed)]
        t2 = time.perf_counter()
        dense: list[tuple[str, float]] = []
        dense_ms: dict[str, float] = {}
        if pending is not None:
            self._count_ahead(pending, snap, lexical)
            dense, dense_ms = pending.result()
        t3 = time.perf_counter()
        by_lexical = [c for c, _ in lexical]
        if cfg.fusion == "score" and dense and weights[DENSE] > 0:
            # one ranking in place of two, weighing in RRF what the two did
            by_lexical = _score_fused(snap, query_tokens, lexical, dense, weights)
            weights[LEXICAL], weights[DENSE] = weights[LEXICAL] + weights[DENSE], 0.0
        rankings: dict[str, list[str] | dict[str, int]] = {
            LEXICAL: by_lexical,
            DENSE: [c for c, _ in dense],
            COVERAGE: by_coverage,
            TITLE: _by_title(snap, question, lexical),
            AMOUNT: _by_amount(snap, question, lexical),
            FEEDBACK: by_feedback,
        }
        fused = rrf(rankings, weights, cfg.rrf_k)
        superseded = snap.superseded_for(groups)
        shown = fused[: k * 3]  # what the reranker reorders, or demoted passages give way to
        if self.reranker is None and not any(
            snap.doc_ids[snap.row_of[cid]] in superseded for cid, _ in fused[:k]
        ):
            shown = fused[:k]  # nothing of the best k sinks: the rest stays below them
        passages = [snap.passage(snap.row_of[cid], score, groups) for cid, score in shown]
        t4 = time.perf_counter()
        if self.reranker is not None:
            passages = self.reranker.rerank(question, passages)
        passages = self._prefer_newest(passages, question, superseded)[:k]
        dense_top = dense[0][1] if dense else 0.0
        lexical_scaled = (lexical[0][1] / math.log1p(len(snap.ids))) if lexical else 0.0
        rows = [snap.row_of[p.chunk_id] for p in passages]
        return Retrieval(
            passages=passages,
            lang=lang,
            dense_top=dense_top,
            lexical_top=lexical[0][1] if lexical else 0.0,
            lexical_scaled=lexical_scaled,
            evidence=features(question, passages, snap.bm25, rows, dense_top, lexical_scaled),
            timings_ms={
                # BM25 and the mask (snapshot and mask lookups before it included)
                "lexical": (t1 - t0) * 1000,
                # coverage and the feedback search, still beside the dense side
                "lexical_more": (t2 - t1) * 1000,
                # the wait for the dense side, which ran beside the lexical one
                "dense": (t3 - t2) * 1000,
                # what the dense side itself took: question embedding, search
                **dense_ms,
                "rerank": (time.perf_counter() - t4) * 1000,
                "retrieve": (time.perf_counter() - t0) * 1000,
            },
        )

    @staticmethod
    def _prefer_newest(
        passages: list[Passage], question: str, superseded: dict[str, str]
    ) -> list[Passage]:
        """Superseded passages sink below current ones unless the question names their version."""
        ranked: list[tuple[float, int, Passage]] = []
        for i, p in enumerate(passages):
            named = p.superseded and superseded.get(p.doc_id, "") in question
            demoted = p.superseded and not named
            score = p.score * 0.5 if demoted else p.score
            ranked.append((-score, i, replace(p, score=score) if demoted else p))
        return [p for _, _, p in sorted(ranked)]
