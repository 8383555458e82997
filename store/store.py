"""The store: the ledger (of record), the vector index and the embedder of one store folder,
held together for a process. Ingestion writes through it; the query side reads through it.

    store = open_store(settings)            # ledger.sqlite + Chroma under store.path
    store.ledger.documents(); store.vectors.count(store.collection)
    store.embedder.embed_batch(["年假"])     # loaded on first use, cached per passage text
    with store.writing("kb ingest"):        # one writer at a time (store/write_lock.py)
        ...
    store.close()

Its parts are ports (`core.ports`): `Store(settings, ledger, vectors, embedder)` takes fakes in
the unit tests and the real adapters from `open_store`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from core.config import Settings
from core.errors import ConfigError
from core.ports import Embedder, VectorIndex, Vectors
from core.types import Chunk, IngestReport
from store.crosslang_space import CrosslangSpace
from store.embed.embedder import (
    E5_NAME,
    CachedEmbedder,
    cached_name,
    export_root,
    open_embedder,
    read_cached,
)
from store.embed.multilingual import MultilingualEmbedder, open_multilingual
from store.embed.question_numpy import open_question_encoder
from store.lazy_vectors import LazyVectorIndex
from store.ledger import Ledger
from store.vectors import open_vector_index
from store.write_lock import write_lock

EmbedderSource = Callable[[], Embedder]
# Makes the question encoder, or None when the passage embedder must embed questions too.
QuestionSource = Callable[[], Embedder | None]
# Questions whose vectors a process keeps, the least recently asked dropped first
# (`Store.question_vector`): people ask the same things ("how many days of annual leave?"), and
# a repeated question skips its embedding (3-11 ms on the 2-core machine). 256 x 384
# float32 is 0.4 MB.
QUESTION_VECTORS = 256


class Store:
    """The parts under one store folder. The embedder is made on first use (loading a model
    takes seconds a question-only process may never need)."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        vectors: VectorIndex,
        embedder: Embedder | EmbedderSource,
        questions: QuestionSource | None = None,
        space: CrosslangSpace | None = None,
    ) -> None:
        self.settings = settings
        self.path = settings.store_path()
        self.cache_path = embed_cache_path(settings)
        self.ledger = ledger
        self.vectors = vectors
        self._embedder: Embedder | None = None
        self._embedder_lock = threading.Lock()
        self._source = embedder
        self._questions = questions
        self._question_encoder: Embedder | None = None
        self._question_vectors: OrderedDict[str, Vectors] = OrderedDict()
        self._question_vectors_lock = threading.Lock()
        self._encoder_switches = 0  # `use_question_encoder` calls: vectors of before not kept
        # The second vector space (store/crosslang_space.py), where embed.multilingual_model is set.
        self.space = space
        self._lock = write_lock(self.path, ledger, settings.store.lock_wait_s)
        # Writes this process finished: a reader of this store rebuilds its snapshot after one.
        self.writes = 0

    @contextmanager
    def writing(self, what: str) -> Iterator[None]:
        """Hold the store's write lock (`store/write_lock.py`) for the block: every write to the
        ledger's documents and chunks or to Chroma happens inside one; readers never wait.
        `what` names the writer in the message another writer gets. A block that ends well
        brings the crosslang space up to the live chunks (`CrosslangSpace.follow`)."""
        with self._lock.hold(what):
            try:
                yield
                if self.space is not None:
                    self.space.follow()
            finally:
                self.writes += 1

    @property
    def writing_now(self) -> bool:
        """Whether this process holds the store's write lock."""
        return self._lock.held

    @property
    def collection(self) -> str:
        """The Chroma collection that holds the live vectors."""
        return self.ledger.get_meta("collection") or f"{self.settings.store.collection}_1"

    @property
    def embedder(self) -> Embedder:
        """The passage embedder (through the cache, where there is one)."""
        with self._embedder_lock:  # ingestion loads it in a warm-up thread (ingest/pipeline.py)
            if self._embedder is None:
                source = self._source
                self._embedder = source() if callable(source) else source
            return self._embedder

    def embed_question(self, texts: list[str]) -> Vectors:
        """Questions and answer sentences are embedded past the cache: asking writes nothing.
        A question encoder, where there is one (`store/embed/question_numpy.py`: the same model
        without torch), saves a question-only process the seconds of loading the passage
        embedder."""
        if self._questions is not None:
            self._question_encoder, self._questions = self._questions(), None
        if self._question_encoder is not None:
            return self._question_encoder.embed_batch(texts)
        embedder = self.embedder
        if isinstance(embedder, CachedEmbedder):
            return embedder.embed_uncached(texts)
        return embedder.embed_batch(texts)

    def question_vector(self, question: str) -> Vectors:
        """`embed_question` of one question, kept for the QUESTION_VECTORS most recently asked
        (same text, same vector; read-only, shared by every asker of it).

        store.question_vector("年假几天？") is store.question_vector("年假几天？") -> True"""
        with self._question_vectors_lock:
            kept = self._question_vectors.get(question)
            if kept is not None:
                self._question_vectors.move_to_end(question)
                return kept
            switches = self._encoder_switches
        vector: Vectors = self.embed_question([question])[0]
        vector.setflags(write=False)
        with self._question_vectors_lock:
            if switches == self._encoder_switches:  # not switched meanwhile (`WarmUp`)
                self._question_vectors[question] = vector
                while len(self._question_vectors) > QUESTION_VECTORS:
                    self._question_vectors.popitem(last=False)
        return vector

    def use_question_encoder(self, encoder: Embedder) -> None:
        """Embed questions with `encoder` from now on: a faster one that a long-running process
        loaded after its start (`ui.wiring.WarmUp`). The kept question vectors are dropped:
        the new encoder's may differ in the last digits."""
        with self._question_vectors_lock:
            self._question_encoder, self._questions = encoder, None
            self._encoder_switches += 1
            self._question_vectors.clear()

    @property
    def cached_name(self) -> str:
        """The name the embedding cache keeps this store's passage vectors under."""
        return cached_name(self.settings.embed)

    def stored_vectors(self, collection: str, chunks: Sequence[Chunk], model: str) -> Vectors:
        """The vectors `collection` holds for `chunks` (zeros for one it lacks), read from the
        embedding cache where it has them under `model`'s name (every passage a store embeds
        passes through it), so that a question-only process never imports Chroma (2-3 s of a
        cold `kb ask` on 2 cores); the rest from the vector index (another cache file, a
        Chroma server's store)."""
        cached = read_cached(self.cache_path, model, [c.embed_text() for c in chunks])
        if cached and len(cached) == len(chunks):
            return np.stack([cached[i] for i in range(len(chunks))])
        missing = [i for i in range(len(chunks)) if i not in cached]
        fetched = self.vectors.vectors(collection, [chunks[i].id for i in missing])
        dim = max([fetched.shape[1], *(len(v) for v in cached.values())])
        out = np.zeros((len(chunks), dim), dtype=np.float32)
        if fetched.shape[1] == dim:
            out[missing] = fetched
        for i, vector in cached.items():
            out[i] = vector
        return out

    def embedded(self) -> int:
        """Texts the embedder has computed (cache misses) since it was made."""
        if isinstance(self._embedder, CachedEmbedder):
            return self._embedder.computed
        return 0

    def finish_run(
        self, report: IngestReport, started: float, embedded_before: int
    ) -> IngestReport:
        """Fill in what the run embedded and how long it took, and record it in the ledger."""
        report.embedded = self.embedded() - embedded_before
        report.seconds = time.perf_counter() - started
        self.ledger.finish_run(report.run_id, report.counts)
        return report

    def close(self) -> None:
        if isinstance(self._embedder, CachedEmbedder):
            self._embedder.close()
        if self.space is not None:
            self.space.close()
        self.ledger.close()


def open_ledger(settings: Settings) -> Ledger:
    """The store's ledger alone (accounts need nothing else): PostgreSQL at `store.ledger_url`,
    else ledger.sqlite in the store folder; it masks personal numbers with `privacy.mask`."""
    return Ledger(settings.store.ledger_url or settings.store_path() / "ledger.sqlite",
                  mask=settings.privacy.mask)


def embed_cache_path(settings: Settings) -> Path:
    """The embedding cache: `embed.cache`, else a file in the store folder."""
    cache = settings.embed.cache
    return Path(cache).expanduser() if cache else settings.store_path() / "embed_cache.sqlite"


def open_store(settings: Settings, *, lazy_vectors: bool = False) -> Store:
    """The real parts: the SQLite ledger, Chroma (embedded or a server, `store.mode`) and the
    configured embedder with its cache. `lazy_vectors` opens Chroma on first use
    (`store/lazy_vectors.py`): a query process that needs no dense search never imports it."""
    cache_path = embed_cache_path(settings)
    vectors: VectorIndex = (
        LazyVectorIndex(lambda: open_vector_index(settings))
        if lazy_vectors
        else open_vector_index(settings)
    )
    ledger = open_ledger(settings)
    space = None
    if settings.embed.multilingual_model:
        space = CrosslangSpace(
            settings, ledger, vectors, lambda: _space_embedder(settings), cache_path
        )
    return Store(
        settings,
        ledger,
        vectors,
        lambda: open_embedder(settings.embed, cache_path),
        lambda: open_question_encoder(settings.embed),
        space,
    )


def _space_embedder(settings: Settings) -> MultilingualEmbedder:
    if settings.embed.multilingual_model == E5_NAME:  # on OpenVINO, shared with embed.model's
        from store.embed.e5_question import E5Space

        return E5Space(export_root(settings.embed), settings.embed.batch_size)
    embedder = open_multilingual(settings.embed)
    if embedder is None:  # not reached: the space is made only when the model is named
        raise ConfigError("embed.multilingual_model is empty")
    return embedder
