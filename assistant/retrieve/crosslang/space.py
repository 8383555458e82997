"""The space, the embedding side of crosslang retrieval: the question embedded by the multilingual
embedder into the store's crosslang space (`store/crosslang_space.py`) and matched against every
allowed passage, on a worker thread beside BM25; the passages in the other language become one more
RRF ranking, but only when they earn it.

The gate: the multilingual embedder scores passages of both languages for the question; a
same-language question's best match is in its own language, a question whose answer is written
in the other language finds that passage scoring near or above the best of its own. The other
language's passages are fused (weight retrieve.crosslang_weight) when the best of them scores
at least the best same-language passage plus retrieve.crosslang_margin (negative: the
embedder favours its own language). The best of a pool grows with its size, so where one
language has k times the other's passages, its k-th best is what is compared (`like_with_like`):
a library holding far more English than Chinese would otherwise open the gate to English ever
more often. A passage of neither language (another script, or numbers alone) is in neither
pool: in multilingual-e5 a table of numbers sits near every question. A store with passages of
one language only, or whose space is not ready (`CrosslangSpace.ready`), gets nothing from this
side.

    space = SpaceSearch(store)
    pending = space.start(snap, "How many days of annual leave?", "en", allowed)
    ...  # BM25 on this thread
    found = space.wait(pending, margin=-0.02, n=50)   # SpaceMatch: hits, fired, best scores
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from assistant.retrieve.dense import Hits, one_blas_thread
from assistant.retrieve.snapshot import Mask, Snapshot
from core.text import detect_lang, latin_share, other_lang
from core.types import Passage
from store.crosslang_space import CrosslangSpace
from store.store import Store

SPACE = "crosslang"  # the ranking's name in RRF
WORKERS = 2  # questions embedded at once by the multilingual embedder (it holds a lock)
# A store of at most this many live chunks has its multilingual vectors held in memory (50,000
# x 384 float32: 77 MB) and scored exactly; a larger one asks Chroma for the nearest FETCH.
HELD_UP_TO = 50_000
FETCH = 1000
# A passage (not Chinese) is English when Latin letters are at least this share of its letters.
ENGLISH_SHARE = 0.5


@dataclass
class SpaceMatch:
    """What the space found for one question."""

    hits: Hits = field(default_factory=list)  # other-language passages, best first; [] if not fired
    fired: bool = False  # the gate let them in
    best: list[str] = field(default_factory=list)  # one passage a document, best first, gate or not
    # the best cosine among passages in the other language, and in the question's own, as the
    # gate compares them (`like_with_like`: the larger language's k-th best)
    best_other: float = 0.0
    best_same: float = 0.0
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class _Space:
    """One snapshot's passages in the crosslang space."""

    generation: int
    matrix: npt.NDArray[np.float32]  # row i: snapshot row i's vector (zeros when absent)


@dataclass
class _Asked:
    """A question on its way: its multilingual vector and what it was asked over."""

    space: CrosslangSpace
    snap: Snapshot
    question: str
    lang: str
    allowed: Mask
    vector: npt.NDArray[np.float32]
    embed_ms: float


Pending = Future[_Asked]


class SpaceSearch:
    """One retriever's space side: its worker threads and the space's vectors of the
    current snapshot."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._workers: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._space: _Space | None = None
        # the generation, its Chinese rows and its English ones
        self._langs: tuple[int, npt.NDArray[np.bool_], npt.NDArray[np.bool_]] | None = None

    def start(self, snap: Snapshot, question: str, lang: str, allowed: Mask) -> Pending | None:
        """The question's multilingual vector (and this snapshot's space, where it is held in
        memory), made on a worker thread; None when the side is off for this snapshot: no
        space ready, or no passage in the other language."""
        space = self.store.space
        if space is None or not space.ready(snap.generation):
            return None
        if other_lang(lang) not in self.languages(snap):
            return None  # one language only: nothing to cross to, and nothing to pay
        with self._lock:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(max_workers=WORKERS,
                                                   thread_name_prefix="crosslang")
        return self._workers.submit(self._embed, space, snap, question, lang, allowed)

    def prepare(self, snap: Snapshot) -> None:
        """Read each passage's language and, for a store held in memory, its vectors in the
        space now, not on the snapshot's first question."""
        space = self.store.space
        if space is None or not space.ready(snap.generation) or len(self.languages(snap)) < 2:
            return
        if len(snap.ids) <= HELD_UP_TO:
            self._space_of(snap, space)

    def _embed(
        self, space: CrosslangSpace, snap: Snapshot, question: str, lang: str, allowed: Mask
    ) -> _Asked:
        t0 = time.perf_counter()
        vector = space.query_vector(question)
        if len(snap.ids) <= HELD_UP_TO:
            self._space_of(snap, space)
        took = (time.perf_counter() - t0) * 1000
        return _Asked(space, snap, question, lang, allowed, vector, took)

    def _space_of(self, snap: Snapshot, space: CrosslangSpace) -> _Space:
        """The snapshot's vectors in the space, fetched once per snapshot."""
        with self._lock:
            held = self._space
            if held is not None and held.generation == snap.generation:
                return held
            rows = range(len(snap.ids))
            matrix = self.store.stored_vectors(space.collection, snap.chunks(rows),
                                               space.cached_name)
            self._space = _Space(snap.generation, matrix)
            return self._space

    def _languages(self, snap: Snapshot) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """Which rows of the snapshot are Chinese passages (core.text.detect_lang) and which
        English ones (the rest whose letters are mostly Latin: a passage of another script or
        of numbers alone is in neither), once per snapshot."""
        with self._lock:
            if self._langs is None or self._langs[0] != snap.generation:
                texts = snap.texts
                zh = np.fromiter((detect_lang(t) == "zh" for t in texts), bool, count=len(texts))
                en = np.zeros(len(texts), dtype=bool)
                for row in np.flatnonzero(~zh):
                    en[row] = latin_share(texts[row]) >= ENGLISH_SHARE
                self._langs = (snap.generation, zh, en)
            _, zh, en = self._langs
            return zh, en

    def own_language(self, snap: Snapshot, lang: str) -> npt.NDArray[np.bool_]:
        """Which rows of the snapshot are passages in `lang` ("en", "zh")."""
        zh, en = self._languages(snap)
        return zh if lang == "zh" else en

    def languages(self, snap: Snapshot) -> set[str]:
        """The languages of the snapshot's passages ("en", "zh")."""
        zh, en = self._languages(snap)
        return {lang for lang, present in (("zh", zh.any()), ("en", en.any())) if present}

    def _scores(self, asked: _Asked) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
        """Rows and their cosines: every row of a store held in memory, else the nearest
        FETCH of Chroma's index."""
        snap = asked.snap
        if len(snap.ids) <= HELD_UP_TO:
            matrix = self._space_of(snap, asked.space).matrix
            with one_blas_thread():
                return np.arange(len(snap.ids)), matrix @ asked.vector
        hits = self.store.vectors.query(asked.space.collection, asked.vector, FETCH)
        kept = [(snap.row_of[c], s) for c, s in hits if c in snap.row_of]
        rows = np.array([r for r, _ in kept], dtype=np.intp)
        return rows, np.array([s for _, s in kept], dtype=np.float32)

    def wait(self, pending: Pending, margin: float, n: int, owners: bool = False,
             reserve: int = 0) -> SpaceMatch:
        """The gate and the other language's best `n` allowed passages (see the module); with
        `owners`, a question that names the organisation of other-language documents only
        (`Snapshot.names_other`) opens it whatever the margin. The best passages of the best
        `reserve` documents among them (`distinct`) are kept in `SpaceMatch.best` whether the
        gate opens or not (`reserved`)."""
        asked = pending.result()
        t0 = time.perf_counter()
        rows, scores = self._scores(asked)
        visible = asked.allowed[rows]
        rows, scores = rows[visible], scores[visible]
        snap = asked.snap
        own_mask = self.own_language(snap, asked.lang)
        other_mask = self.own_language(snap, other_lang(asked.lang))
        own, other = own_mask[rows], other_mask[rows]
        found = SpaceMatch(timings_ms={"crosslang_embed": asked.embed_ms})
        if other.any():
            pools = (int((other_mask & asked.allowed).sum()),
                     int((own_mask & asked.allowed).sum()))
            other_scores = scores[other]
            found.best_other, found.best_same = like_with_like(other_scores, scores[own], pools)
            named = owners and snap.names_other(asked.question, asked.lang)
            found.fired = named or found.best_other >= found.best_same + margin
            order = _best(other_scores, max(n, reserve))
            best_rows = rows[other][order]
            found.best = [snap.ids[r] for r in distinct(
                best_rows, snap.doc_ids, lambda r: only_headings(snap, r), reserve)]
            if found.fired:
                found.hits = [(snap.ids[r], float(s)) for r, s in
                              zip(best_rows[:n], other_scores[order][:n], strict=True)]
        found.timings_ms["crosslang_search"] = (time.perf_counter() - t0) * 1000
        return found


def like_with_like(other: npt.NDArray[np.float32], same: npt.NDArray[np.float32],
                   pools: tuple[int, int]) -> tuple[float, float]:
    """The other language's and the question's own language's scores the gate compares
    (-1.0 for a language without one): each one's best, but the larger pool's k-th best where
    it holds k times the other's passages (`pools`: the other's size, then the own's), as its
    best grows with its size alone.

    like_with_like(np.array([.9, .8, .7, .6]), np.array([.85]), (4, 1)) -> (0.6, 0.85)
    """
    n_other, n_same = pools
    k_other = round(n_other / n_same) if n_same and n_other > n_same else 1
    k_same = round(n_same / n_other) if n_other and n_same > n_other else 1
    return _kth(other, k_other), _kth(same, k_same)


def _kth(scores: npt.NDArray[np.float32], k: int) -> float:
    """The `k`-th highest of `scores` (the lowest where it has fewer; -1.0 where none)."""
    if not len(scores):
        return -1.0
    k = min(k, len(scores))
    return float(np.partition(scores, len(scores) - k)[len(scores) - k])


def _best(scores: npt.NDArray[np.float32], n: int) -> npt.NDArray[np.intp]:
    """The positions of the `n` highest `scores`, highest first (ties in position order)."""
    if 0 < n < len(scores):  # only those at or above the n-th highest are sorted
        kept = np.flatnonzero(scores >= np.partition(scores, len(scores) - n)[len(scores) - n])
        return kept[np.argsort(-scores[kept], kind="stable")][:n]
    return np.argsort(-scores, kind="stable")[:n]


def distinct(rows: Iterable[int], doc_of: Sequence[str], skip: Callable[[int], bool],
             n: int) -> list[int]:
    """The first `n` of `rows` (best first) that are each their document's best (`doc_of`: a
    row's document), rows that `skip` says answer nothing passed over: a document with many
    near passages takes one place of the reserve, not all of them, however many documents
    the library holds on the topic.

    distinct([4, 7, 2, 9], docs, no_row, 2) -> [4, 2]   (docs[4] == docs[7] != docs[2])
    """
    kept: list[int] = []
    seen: set[str] = set()
    for r in rows:
        if len(kept) == n:
            break
        if doc_of[r] not in seen and not skip(r):
            seen.add(doc_of[r])
            kept.append(int(r))
    return kept


def only_headings(snap: Snapshot, row: int) -> bool:
    """Whether a row's text is only its document's title or its section's headings (a cover
    or heading chunk): it embeds near any question on its document's topic and answers
    none."""
    title = snap.docs[snap.doc_ids[row]].meta.title
    return headings_only(snap.texts[row], (title, *snap.sections[row]))


def headings_only(text: str, headings: Sequence[str]) -> bool:
    """Whether every line of `text` is one of `headings`.

    headings_only("Time Off and Leave", ("Time Off and Leave",)) -> True
    headings_only("Leave\nYou get 4 weeks.", ("Leave",)) -> False
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    names = {h.strip() for h in headings}
    return bool(lines) and all(line in names for line in lines)


def reserved(passages: Sequence[Passage], best: Sequence[str], place: int,
             passage_of: Callable[[str, float], Passage]) -> list[Passage]:
    """`passages` (best first) with each of `best` (the other language's best passages by the
    space, their chunk ids) that is not already among the first `place` + len(`best`) moved to
    just after the first `place`, in `best`'s order, scored as the passage before them (packing
    orders by score; `passage_of(chunk id, score)` makes one that was not among them): a bounded
    share of the window holds the other language's best whatever the gate decided, and the
    first `place` passages keep their ranks.

    reserved([a(.9), b(.8), c(.7), x(.1)], ["x"], 1, make) -> [a(.9), x(.9), b(.8), c(.7)]
    """
    top = {p.chunk_id for p in passages[: place + len(best)]}
    moved = [c for c in best if c not in top]
    if not moved:
        return list(passages)
    place = min(place, len(passages))
    score = passages[max(place - 1, 0)].score if passages else 0.0
    had = {p.chunk_id: p for p in passages}
    put = [replace(had[c], score=score) if c in had else passage_of(c, score) for c in moved]
    return [*passages[:place], *put, *(p for p in passages[place:] if p.chunk_id not in moved)]
