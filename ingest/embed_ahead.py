"""Embedding across documents: the passages of many documents gathered into waves, each wave
embedded as one stream (the embedder sorts it by length, so batches pad little) in a background
thread, while the writer chunks the next documents and commits the earlier ones.

    with EmbedAhead(embedder.embed_batch, wave=256, first_wave=32) as ahead:
        for doc in docs:
            for tag, vectors in ahead.add(doc, doc.texts):   # finished ones, in input order
                commit(tag, vectors)
        for tag, vectors in ahead.finish():
            commit(tag, vectors)

Items come back in the order they were added, each with the vectors of its own texts (an item
without texts, a failed file say, comes back in its place with none), so commits keep the
order of a per-document ingest. A wave starts when `wave` texts are waiting, or as soon as
`first_wave` are while the thread is idle (so the first document does not wait for the
wave). At most two waves are in flight: `add` waits for the older one past that, which bounds
the memory held to about three waves. An error of the embedder reaches the caller from the
`add` or `finish` that would have returned that wave, after every earlier item.

The embedder's work runs outside the GIL (OpenVINO, torch), so the caller's chunking, BM25
terms, Chroma and ledger writes run beside it.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Generic, TypeVar

import numpy as np

from core.ports import Vectors

logger = logging.getLogger(__name__)

T = TypeVar("T")
Embed = Callable[[Sequence[str]], Vectors]
IN_FLIGHT = 2  # waves submitted and not yet returned before `add` waits


@dataclass
class _Wave:
    future: Future[Vectors]
    left: int  # its items not yet returned


@dataclass
class _Item(Generic[T]):
    tag: T
    texts: list[str]
    wave: _Wave | None = None  # None until its wave is submitted
    start: int = 0  # of its texts in its wave's vectors


class EmbedAhead(Generic[T]):
    """See the module docstring."""

    def __init__(self, embed: Embed, wave: int, first_wave: int = 1) -> None:
        if wave < 1:
            raise ValueError("wave must be at least 1 text")
        self._embed = embed
        self._wave = wave
        self._first = max(1, min(first_wave, wave))
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="kb-embed")
        self._items: deque[_Item[T]] = deque()  # added and not returned, in input order
        self._open: list[_Item[T]] = []  # with texts, not yet submitted
        self._open_texts = 0
        self._waves: list[_Wave] = []  # submitted, not yet returned
        self.waves = 0  # submitted so far

    def add(self, tag: T, texts: Sequence[str]) -> list[tuple[T, Vectors]]:
        """Queue one item; returns the items finished by now, in input order."""
        item = _Item(tag, list(texts))
        self._items.append(item)
        if item.texts:
            self._open.append(item)
            self._open_texts += len(item.texts)
        idle = all(w.future.done() for w in self._waves)
        if self._open_texts >= self._wave or (idle and self._open_texts >= self._first):
            self._submit()
        return self._release(wait_over=IN_FLIGHT)

    def finish(self) -> list[tuple[T, Vectors]]:
        """Embed what is left and return every item not returned yet, in input order."""
        self._submit()
        return self._release(wait_over=0)

    def _submit(self) -> None:
        if not self._open:
            return
        texts = [t for item in self._open for t in item.texts]
        wave = _Wave(self._pool.submit(self._embed, texts), len(self._open))
        start = 0
        for item in self._open:
            item.wave, item.start = wave, start
            start += len(item.texts)
        logger.info(
            "embedding wave %d: %d passages of %d documents",
            self.waves + 1,
            len(texts),
            len(self._open),
        )
        self._waves.append(wave)
        self.waves += 1
        self._open, self._open_texts = [], 0

    def _release(self, wait_over: int) -> list[tuple[T, Vectors]]:
        """Items at the head whose vectors are ready; waits while more than `wait_over` waves
        are in flight."""
        out: list[tuple[T, Vectors]] = []
        while self._items:
            item = self._items[0]
            if not item.texts:
                out.append((item.tag, np.empty((0, 0), dtype=np.float32)))
                self._items.popleft()
                continue
            wave = item.wave
            if wave is None or (not wave.future.done() and len(self._waves) <= wait_over):
                break
            if out and wave.future.exception() is not None:
                break  # the earlier items go back first; the next call raises the error
            vectors = wave.future.result()  # waits; raises the embedder's error
            out.append((item.tag, vectors[item.start : item.start + len(item.texts)]))
            self._items.popleft()
            wave.left -= 1
            if not wave.left:
                self._waves.remove(wave)
        return out

    def close(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel)

    def __enter__(self) -> EmbedAhead[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(cancel=exc_type is not None)
