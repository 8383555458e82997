"""The dense side of retrieval: the question embedded and its nearest allowed chunks found, on a
worker thread while the question's own thread scores BM25 (`DenseSearch.start`, `wait`).

Most users see most of the corpus: Chroma's unfiltered index is over-fetched (fast) and the
allowed live rows kept. A small store, or a user who may see a small share of the corpus, gets
an exact search over just the vectors that user may see (Chroma's own metadata filter costs
10-100 times more; bench/query/retrieve_latency.py). While the question waits for this side,
the best lexical candidates are counted ahead for packing.

    dense = DenseSearch(store, count_ahead=counter.prime)
    pending = dense.start(snap, "年假可以结转吗？", snap.allowed(["all"]), n=50)
    ...  # BM25 on this thread
    hits, timings_ms = dense.wait(pending, snap, lexical)  # [(chunk id, cosine), ...], best first
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from assistant.pack import render_passages
from assistant.retrieve.snapshot import Mask, Snapshot
from store.store import Store

# (chunk id, score) pairs, best first.
Hits = list[tuple[str, float]]
# The milliseconds the dense side's two steps took ("dense_embed", "dense_search").
Timings = dict[str, float]

OVERFETCH = 4
# Below this share of visible chunks the dense side searches the visible vectors exactly,
EXACT_BELOW = 0.3
# unless they are more than this many (a tenth of a million chunks: 154 MB of float32 to read
# per question, 30 ms on the 2-core machine); then Chroma is asked for enough candidates that
# `n` survive the group mask (n * SURVIVE_MARGIN / share), up to MAX_FETCH of them.
EXACT_UP_TO = 50_000
SURVIVE_MARGIN = 1.5
MAX_FETCH = 1000
# A store of at most this many live chunks is searched exactly whatever share the user sees:
# all its vectors held in memory once per snapshot (20,000 x 384 float32: 31 MB), scored and
# the user's mask applied. Exact is at least as accurate as HNSW, and the same in every
# process: Chroma's HNSW graph takes in the writes not yet persisted when a process opens it,
# and two processes over one 12,000-chunk store returned different top-50s for 12 of 350
# questions (4 of them in the top 10). One thread, 2-core machine: 0.03 ms at 600 vectors,
# 1-2 ms at 12,000. The vectors are read again for each new snapshot (after every write), on
# its first question, from the embedding cache (else Chroma). Larger stores keep Chroma.
EXACT_STORE_UP_TO = 20_000
# Threads that embed questions and search Chroma beside the BM25 scoring (one per question in
# flight; the app answers a few at a time).
DENSE_WORKERS = 4
# Lexical candidates whose blocks are counted ahead while the dense side runs (`count_ahead`).
COUNT_AHEAD = 30
# At most this long the question's thread waits for the dense side's thread to start
# (`DenseSearch.start`; longer only when every worker is busy).
DENSE_START_WAIT_S = 0.05


_blas: Any = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread for the block: a matrix-vector product over the visible vectors is
    too small to share, and on a busy 2-core machine waiting for a second thread cost 30 ms
    where one thread took 1 ms (10,000 vectors; bench/query/retrieve_latency.py)."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController()
    with _blas.limit(limits=1, user_api="blas"):
        yield


class DenseSearch:
    """One retriever's dense side: its worker threads, and what it does while waiting."""

    def __init__(
        self, store: Store, count_ahead: Callable[[Sequence[str]], object] | None = None
    ) -> None:
        self.store = store
        # The token counter's `prime`, for the wait on the dense side (`_count_ahead`).
        self.count_ahead = count_ahead
        self._workers: ThreadPoolExecutor | None = None
        self._starting = threading.Lock()

    def start(
        self, snap: Snapshot, question: str, allowed: Mask, n: int
    ) -> Future[tuple[Hits, Timings]]:
        """`_timed` on a worker thread: the question is embedded while this thread scores
        BM25 (the embedding model and numpy's large operations release the interpreter lock),
        so the dense side costs a question only what it takes beyond the lexical side.

        It returns once the worker has started: a worker woken while this thread runs Python
        waits for the interpreter lock until this thread waits too, and the embedding then
        ran after BM25 rather than beside it (English questions on the sample store, without
        the model server: the wait for the dense side 6.5 -> 4.5 ms p50; in the benches with
        the server, no difference beyond their noise: docs/benchmarks-history.md, "overhead and 1M,
        fifth pass").
        Chroma's query and the embedding each give up and take back the interpreter lock
        more than once a call, so pure Python on this thread slows them (at 1M chunks a k=200
        query took 3.0 ms alone, 14.6 beside a thread running Python, 3.1 beside numpy; the
        embedding 2.2 and 17.8 ms; docs/benchmarks-history.md, "1M and overhead, sixth pass")."""
        with self._starting:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(
                    max_workers=DENSE_WORKERS, thread_name_prefix="dense"
                )
        started = threading.Event()
        pending = self._workers.submit(self._timed, snap, question, allowed, n, started)
        started.wait(DENSE_START_WAIT_S)
        return pending

    def wait(
        self,
        pending: Future[tuple[Hits, Timings]],
        snap: Snapshot,
        lexical: Sequence[tuple[str, float]],
    ) -> tuple[Hits, Timings]:
        """What `start` found, the best `lexical` candidates counted ahead meanwhile."""
        self._count_ahead(pending, snap, lexical)
        return pending.result()

    def _timed(
        self, snap: Snapshot, question: str, allowed: Mask, n: int, started: threading.Event
    ) -> tuple[Hits, Timings]:
        """`nearest`, with the milliseconds its two steps took: "dense_embed" (the question's
        vector) and "dense_search" (the nearest allowed chunks). Sets `started` first."""
        started.set()
        t0 = time.perf_counter()
        vector = self.store.question_vector(question)
        t1 = time.perf_counter()
        hits = self.nearest(snap, vector, allowed, n)
        t2 = time.perf_counter()
        return hits, {"dense_embed": (t1 - t0) * 1000, "dense_search": (t2 - t1) * 1000}

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

    def prepare(self, snap: Snapshot) -> None:
        """Read a small store's vectors now (the matrix `nearest` searches exactly), not on
        the snapshot's first question."""
        if len(snap.ids) <= EXACT_STORE_UP_TO:
            self._every_row(snap)

    def nearest(
        self, snap: Snapshot, vector: npt.NDArray[np.float32], allowed: Mask, n: int
    ) -> Hits:
        """The `n` nearest allowed live chunks to the question's `vector`. Most users see
        most of the corpus: Chroma's unfiltered index is asked for a few times `n` and the
        allowed ones kept. A small store (EXACT_STORE_UP_TO) gets an exact search over all its
        vectors, held in memory per snapshot, the mask applied to the scores; a user who sees a
        small share of a corpus of fewer than EXACT_UP_TO vectors, or too few surviving, one
        over just the vectors they may see, held per group set (Chroma's metadata filter costs
        far more). A small share of a large corpus
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
        if small:  # every row's vector, one matrix per snapshot, the mask on the scores
            ids, matrix = self._every_row(snap)
        else:
            ids, matrix = snap.visible_vectors(allowed, self.store)
        with one_blas_thread():
            scores = matrix @ vector
        if small:
            scores = np.where(allowed, scores, -np.inf)
        n = min(n, visible)
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(ids[i], float(scores[i])) for i in top]

    def _every_row(self, snap: Snapshot) -> tuple[list[str], npt.NDArray[np.float32]]:
        """Every row's id and vector, read once per snapshot (a small store's exact search)."""
        return snap.visible_vectors(np.ones(len(snap.ids), dtype=bool), self.store)
