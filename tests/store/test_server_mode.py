"""`store.mode = "server"`: the same ingestion, retrieval with access control, full re-index
and delete against a real Chroma server (`chroma run` on loopback), with the ledger and the
server's vectors in agreement after each step."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from assistant.retrieve.retriever import Retriever
from core.errors import StoreError
from ingest.pipeline import delete_document, ingest_paths
from ingest.reindex import reindex
from store.store import open_store

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"


def server_settings(make_settings, **keys):  # type: ignore[no-untyped-def]
    settings = make_settings()
    return dataclasses.replace(settings, store=dataclasses.replace(settings.store, **keys))


def agree(store) -> None:  # type: ignore[no-untyped-def]
    live = set(store.ledger.chunk_ids())
    assert live and store.vectors.all_ids(store.collection) == live


def test_ingest_retrieve_reindex_delete_on_a_chroma_server(
    make_settings, chroma_server, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES, docs)
    settings = server_settings(make_settings, **chroma_server.store_keys("srv_a"))
    store = open_store(settings)
    try:
        report = ingest_paths(store, [docs])
        assert report.counts["ingested"] == 11 and report.counts["failed"] == 0
        agree(store)
        retriever = Retriever(settings, store)
        public = retriever.retrieve("薪酬等级 工资范围", ["all"], k=20).passages
        assert public and all(p.groups == ("all",) for p in public)
        hr = retriever.retrieve("薪酬等级 工资范围", ["hr"], k=20).passages
        assert hr and all("hr" in p.groups for p in hr)
        leave = retriever.retrieve("How many days of unused annual leave can be carried over?",
                                   ["all"]).passages
        assert leave[0].file == "Employee-Leave-Policy.pdf" and retriever.snapshot()

        old = store.collection
        again = reindex(store, full=True)
        assert again.counts["failed"] == 0 and store.collection != old
        assert old not in store.vectors.collections()
        agree(store)

        gone = delete_document(store, "员工福利手册.docx")
        assert gone.chunk_count > 0
        agree(store)
    finally:
        store.close()


def test_a_chroma_server_that_does_not_answer_is_named(make_settings) -> None:
    from devtools.ports import free_port

    settings = server_settings(make_settings, mode="server", port=free_port())
    with pytest.raises(StoreError, match="chroma run"):
        open_store(settings)
