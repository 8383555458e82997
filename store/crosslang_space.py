"""The crosslang space, a store's second vector space: every live passage embedded again by the
multilingual embedder (`store/embed/multilingual.py`) into its own Chroma collection, keyed by chunk
id, so a question in one language can be matched with passages in the other.

The space follows the live chunks rather than being written beside them: at the end of every
write to the store (`Store.writing`), `follow` embeds the live passages the collection lacks
and deletes the ones no longer live, then records the ledger generation it matched and the
model. A run killed midway leaves the record behind the ledger, and the next write finishes
the work; a full re-index keeps the chunk ids of unchanged passages, so their vectors stay.
The query side uses the space only while the record matches its snapshot's generation
(`ready`): a store ingested before the space existed, or while `embed.multilingual_model` was
off, answers as before until its next write with the model set (`kb reindex`).

    space = CrosslangSpace(store_settings, ledger, vectors, embedder_source, cache_path)
    space.follow()                        # under the write lock: embedded, deleted
    space.ready(generation) -> True       # the record matches: the query side may use it
    space.query_vector("年假几天？")        # the question in the shared space, kept (LRU)
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from core.config import Settings
from core.ports import Embedder, VectorIndex, Vectors
from core.types import Chunk
from store.embed.e5_weights import passage_name
from store.embed.embedder import CachedEmbedder
from store.embed.multilingual import MultilingualEmbedder, PassageEmbedder
from store.ledger import Ledger

logger = logging.getLogger(__name__)

META_MODEL = "multilingual_model"  # the model the space was embedded with
META_GENERATION = "multilingual_generation"  # the ledger generation it matched last
# Passages embedded and upserted at a time: a killed run keeps what it wrote.
FOLLOW_BATCH = 256
QUESTION_VECTORS = 256  # questions whose multilingual vectors are kept, like Store's


def space_collection(settings: Settings) -> str:
    """The space's Chroma collection: a name `recover` and a full re-index leave alone (they
    drop collections named after `store.collection`)."""
    return f"multilingual_{settings.store.collection}"


class CrosslangSpace:
    """The multilingual collection of one store, its embedder (made on first use) and the
    record of what it holds."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        vectors: VectorIndex,
        embedder: Callable[[], MultilingualEmbedder],
        cache_path: Path | None = None,
    ) -> None:
        self.model = settings.embed.multilingual_model
        self.collection = space_collection(settings)
        self.ledger = ledger
        self.vectors = vectors
        self._source = embedder
        self._cache_path = cache_path
        self._embedder: MultilingualEmbedder | None = None
        self._passages: Embedder | None = None
        self._lock = threading.Lock()
        self._questions: OrderedDict[str, Vectors] = OrderedDict()
        # told (embedded, to embed) after each batch `follow` embeds: `kb ingest`'s bar
        self.progress: Callable[[int, int], None] | None = None

    @property
    def embedder(self) -> MultilingualEmbedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = self._source()
            return self._embedder

    def embed_ahead(self, texts: Sequence[str]) -> None:
        """Embed passages into the cache before they are live (the ingest's waves, beside the
        parsing): `follow` then finds them there and only writes them to the collection."""
        self._passage_embedder().embed_batch(texts)

    def _passage_embedder(self) -> Embedder:
        if self._passages is None:
            inner = PassageEmbedder(self.embedder)
            self._passages = (
                CachedEmbedder(inner, self._cache_path) if self._cache_path else inner
            )
        return self._passages

    @property
    def cached_name(self) -> str:
        """The name the embedding cache keeps the space's passage vectors under."""
        return passage_name(self.model)

    def ready(self, generation: int) -> bool:
        """Whether the space holds exactly the live passages of `generation`, by this model."""
        return (
            self.ledger.get_meta(META_MODEL) == self.model
            and self.ledger.get_meta(META_GENERATION) == str(generation)
        )

    def follow(self) -> tuple[int, int]:
        """Make the space hold the live passages: embed those it lacks, delete those no longer
        live, record the generation. Only under the store's write lock. Returns (embedded,
        deleted)."""
        generation = self.ledger.generation()
        if self.ready(generation):
            return 0, 0
        if self.ledger.get_meta(META_MODEL) not in ("", self.model):
            logger.info("multilingual space: model changed, dropping %s", self.collection)
            self.vectors.drop(self.collection)
        have = self.vectors.all_ids(self.collection)
        todo = max(self.ledger.chunk_count() - len(have), 0)  # fewer where `have` is stale
        live: set[str] = set()
        embedded = 0
        for batch in self._missing(have, live):
            texts = [c.embed_text() for c in batch]
            vectors = self._passage_embedder().embed_batch(texts)
            self.vectors.upsert(
                self.collection, [c.id for c in batch], vectors, [{"doc": c.doc_id} for c in batch]
            )
            embedded += len(batch)
            if self.progress is not None:
                self.progress(embedded, max(todo, embedded))
        stale = sorted(have - live)
        self.vectors.delete(self.collection, stale)
        self.ledger.set_meta(META_MODEL, self.model)
        self.ledger.set_meta(META_GENERATION, str(generation))
        if embedded or stale:
            logger.info("multilingual space: %d passages embedded, %d deleted at generation %d",
                        embedded, len(stale), generation)
        return embedded, len(stale)

    def _missing(self, have: set[str], live: set[str]) -> Iterator[list[Chunk]]:
        """The live chunks the collection lacks, FOLLOW_BATCH at a time; `live` collects
        every live id on the way."""
        batch: list[Chunk] = []
        for table in self.ledger.chunk_batches():
            live.update(table.ids)
            for cid, doc, ordinal, text, section in zip(
                table.ids, table.doc_ids, table.ordinals, table.texts, table.sections,
                strict=True,
            ):
                if cid not in have:
                    batch.append(Chunk(cid, doc, ordinal, text, section))
                    if len(batch) >= FOLLOW_BATCH:
                        yield batch
                        batch = []
        if batch:
            yield batch

    def state(self) -> str:
        """One line for `kb status`: on, not yet built (and what to run), or off."""
        if not self.model:
            return "off (embed.multilingual_model is empty)"
        held = self.vectors.count(self.collection)
        if self.ready(self.ledger.generation()):
            return f"on: {self.model}, {held} passages"
        return (f"not ready: {held} passages of {self.model} for {self.ledger.chunk_count()} live "
                "ones; questions across languages use it after `kb reindex`")

    def query_vector(self, question: str) -> Vectors:
        """The question in the shared space, the QUESTION_VECTORS most recent ones kept."""
        with self._lock:
            kept = self._questions.get(question)
            if kept is not None:
                self._questions.move_to_end(question)
                return kept
        vector = self.embedder.query(question)
        vector.setflags(write=False)
        with self._lock:
            self._questions[question] = vector
            while len(self._questions) > QUESTION_VECTORS:
                self._questions.popitem(last=False)
        return vector

    def warm(self) -> None:
        """For a long-running process: the embedder's faster question side loaded, where it
        has one (`E5Space.warm`); the kept question vectors dropped, as they may differ in the
        last digits."""
        warm = getattr(self.embedder, "warm", None)
        if warm is not None:
            warm()
            with self._lock:
                self._questions.clear()

    def close(self) -> None:
        if isinstance(self._passages, CachedEmbedder):
            self._passages.close()
