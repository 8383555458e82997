"""The store functions as a `kb` command calls them, for tests that take settings: each call
opens the store, runs one public function of `ingest/` and closes the store again.

    ingest_paths(settings, [docs]).counts["ingested"] -> 11
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.config import Settings
from core.types import DocRecord, IngestReport
from ingest import pipeline
from ingest import reindex as reindexing
from ui.wiring import store_for


def ingest_paths(
    settings: Settings, paths: Sequence[Path], *args: Any, **kwargs: Any
) -> IngestReport:
    with store_for(settings) as store:
        return pipeline.ingest_paths(store, paths, *args, **kwargs)


def reindex(settings: Settings, *args: Any, **kwargs: Any) -> IngestReport:
    with store_for(settings) as store:
        return reindexing.reindex(store, *args, **kwargs)


def delete_document(settings: Settings, ref: str) -> DocRecord:
    with store_for(settings) as store:
        return pipeline.delete_document(store, ref)


def list_documents(settings: Settings) -> list[DocRecord]:
    with store_for(settings) as store:
        return pipeline.list_documents(store)


def store_status(settings: Settings) -> dict[str, Any]:
    with store_for(settings) as store:
        return pipeline.store_status(store)
