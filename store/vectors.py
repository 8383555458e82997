"""The vector store: Chroma behind `upsert / query / delete`.

Chroma holds the vectors and, on each, the metadata a server-mode deployment would filter on
(document id, access groups). Which chunks are live is the ledger's word, not Chroma's: a
vector the ledger does not list is an orphan of an interrupted run and is never returned as a
passage (the query side filters by the ledger) and is removed by `collect_garbage`.

    store = open_vector_index(settings)       # embedded (path/chroma) or a Chroma server
    store.upsert("kb_chunks_1", ["c1"], vectors, [{"doc_id": "d1", "groups": "|all|"}])
    store.create("kb_bench", {"space": "cosine", "sync_threshold": 50_000})  # HNSW settings
    store.query("kb_chunks_1", vector, 10) -> [("c1", 0.93)]
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from core.config import Settings
from core.errors import ConfigError, StoreError
from core.ports import Metadata

logger = logging.getLogger(__name__)


def group_metadata(doc_id: str, groups: Iterable[str]) -> Metadata:
    """The metadata stored on every vector: doc id, groups as "|a|b|", one flag per group.

    group_metadata("d1", ["all"]) -> {"doc_id": "d1", "groups": "|all|", "g_all": True}
    """
    groups = sorted(set(groups))
    meta: Metadata = {"doc_id": doc_id, "groups": "|" + "|".join(groups) + "|"}
    for group in groups:
        meta[f"g_{group}"] = True
    return meta


def open_vector_index(settings: Settings) -> VectorStore:
    """Chroma as `store.mode` says: embedded under the store folder, or a server's HTTP API."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    cfg = settings.store
    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if cfg.mode == "embedded":
        path = settings.store_path() / "chroma"
        try:
            path.mkdir(parents=True, exist_ok=True)
            client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
        except Exception as exc:  # chromadb raises many kinds; all mean the same to the user
            raise StoreError(f"Chroma store at {path} could not be opened ({exc})") from exc
        return VectorStore(client, cfg.hnsw_sync_threshold)
    if cfg.mode == "server":
        where = f"{'https' if cfg.ssl else 'http'}://{cfg.host}:{cfg.port}"
        headers = {"Authorization": f"Bearer {cfg.token}"} if cfg.token else None
        try:
            client = chromadb.HttpClient(
                host=cfg.host,
                port=cfg.port,
                ssl=cfg.ssl,
                headers=headers,
                tenant=cfg.tenant,
                database=cfg.database,
                settings=chroma_settings,
            )
            client.heartbeat()
        except Exception as exc:
            raise StoreError(
                f"Chroma server at {where} did not answer ({exc}); start it (`chroma run "
                "--path DIR --port N`) or check store.host, store.port and store.token"
            ) from exc
        return VectorStore(client, cfg.hnsw_sync_threshold)
    raise ConfigError(f'store.mode {cfg.mode!r}: use "embedded" or "server"')


class VectorStore:
    """`VectorIndex` over a Chroma client (embedded or HTTP: the same API)."""

    def __init__(self, client: Any, sync_threshold: int = 1000) -> None:
        self._client = client
        self._sync_threshold = sync_threshold
        self._collections: dict[str, Any] = {}
        self._max_batch = int(self._client.get_max_batch_size())

    def _collection(self, name: str) -> Any:
        if name not in self._collections:
            # an existing collection keeps the settings it was created with
            self._collections[name] = self._client.get_or_create_collection(
                name,
                configuration={"hnsw": {"space": "cosine", "sync_threshold": self._sync_threshold}},
            )
        return self._collections[name]

    def _spans(self, count: int) -> Iterator[slice]:
        """Slices of at most Chroma's maximum batch size covering `count` items."""
        return (slice(s, s + self._max_batch) for s in range(0, count, self._max_batch))

    def create(self, collection: str, hnsw: Mapping[str, str | int | float]) -> bool:
        """Create `collection` with these HNSW settings (Chroma's collection `configuration`:
        space, ef_construction, max_neighbors, sync_threshold, ...); False if it exists
        already (its settings are fixed at creation and stay as they were).

        create("kb_chunks_1", {"space": "cosine", "sync_threshold": 50_000}) -> True
        """
        if collection in self.collections():
            return False
        self._collections[collection] = self._client.create_collection(
            collection, configuration={"hnsw": dict(hnsw)}
        )
        return True

    def add(
        self,
        collection: str,
        ids: Sequence[str],
        vectors: npt.NDArray[np.float32],
        metadatas: Sequence[Metadata],
    ) -> None:
        """`upsert` for ids the collection does not hold (a fresh build): Chroma skips the
        lookup of each id's old vector. An id it holds already keeps its old vector."""
        self._write("add", collection, ids, vectors, metadatas)

    def upsert(
        self,
        collection: str,
        ids: Sequence[str],
        vectors: npt.NDArray[np.float32],
        metadatas: Sequence[Metadata],
    ) -> None:
        self._write("upsert", collection, ids, vectors, metadatas)

    def _write(
        self,
        method: str,
        collection: str,
        ids: Sequence[str],
        vectors: npt.NDArray[np.float32],
        metadatas: Sequence[Metadata],
    ) -> None:
        """Chroma's `add` or `upsert`, in slices of its largest batch."""
        write = getattr(self._collection(collection), method)
        for span in self._spans(len(ids)):
            write(ids=list(ids[span]), embeddings=vectors[span], metadatas=list(metadatas[span]))
        logger.info("chroma %s %d vectors into %s", method, len(ids), collection)

    def update_metadata(
        self, collection: str, ids: Sequence[str], metadatas: Sequence[Metadata]
    ) -> None:
        target = self._collection(collection)
        for span in self._spans(len(ids)):
            target.update(ids=list(ids[span]), metadatas=list(metadatas[span]))

    def query(
        self,
        collection: str,
        vector: npt.NDArray[np.float32],
        n: int,
        where: dict[str, Any] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest `n` ids with cosine similarity, best first (fewer when the collection holds
        fewer). Chroma 1.5 answers n > count with what it has, so the collection is not
        counted first: `count()` cost 8 ms at 100,000 vectors, six times the search itself."""
        target = self._collection(collection)
        result = target.query(
            query_embeddings=[vector], n_results=n, where=where, include=["distances"]
        )
        ids = result["ids"][0] if result["ids"] else []
        distances = result["distances"][0] if result["distances"] else [0.0] * len(ids)
        return [(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]

    def existing(self, collection: str, ids: Sequence[str]) -> set[str]:
        """Which of `ids` the collection holds."""
        target = self._collection(collection)
        found: set[str] = set()
        for span in self._spans(len(ids)):
            found.update(target.get(ids=list(ids[span]), include=[])["ids"])
        return found

    def vectors(self, collection: str, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """The stored vectors of `ids`, in that order (rows of zeros for unknown ids)."""
        target = self._collection(collection)
        found: dict[str, Any] = {}
        for span in self._spans(len(ids)):
            part = target.get(ids=list(ids[span]), include=["embeddings"])
            found.update(zip(part["ids"], part["embeddings"], strict=True))
        out = np.zeros((len(ids), self._dim(found)), dtype=np.float32)
        for i, cid in enumerate(ids):
            if cid in found:
                out[i] = found[cid]
        return out

    @staticmethod
    def _dim(found: dict[str, Any]) -> int:
        return len(next(iter(found.values()))) if found else 0

    def all_ids(self, collection: str) -> set[str]:
        target = self._collection(collection)
        found: set[str] = set()
        offset = 0
        while True:
            page = target.get(include=[], limit=self._max_batch, offset=offset)["ids"]
            found.update(page)
            if len(page) < self._max_batch:
                return found
            offset += len(page)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        target = self._collection(collection)
        for span in self._spans(len(ids)):
            target.delete(ids=list(ids[span]))
        logger.info("chroma delete %d vectors from %s", len(ids), collection)

    def count(self, collection: str) -> int:
        return int(self._collection(collection).count())

    def collections(self) -> list[str]:
        return sorted(c if isinstance(c, str) else c.name for c in self._client.list_collections())

    def drop(self, collection: str) -> None:
        self._collections.pop(collection, None)
        if collection in self.collections():
            self._client.delete_collection(collection)
            logger.info("chroma dropped collection %s", collection)

    def collect_garbage(self, collection: str, live: set[str]) -> int:
        """Remove vectors the ledger does not list; returns how many went."""
        orphans = sorted(self.all_ids(collection) - live)
        self.delete(collection, orphans)
        return len(orphans)
