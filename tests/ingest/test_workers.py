"""`kb ingest --workers N` (ingest/workers.py): parsing and embedding in N processes each, one
writer, the same store as one worker makes. Each store gets its own, empty embedding cache, so
the vectors of the two runs are computed twice, by different processes, and compared."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import docx
import numpy as np
import pytest

from core.config import Settings
from core.types import IngestReport
from ingest import pipeline
from ingest.discover import doc_id_for
from store.store import open_store
from tests.support.stores import store_problems

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"
FILES = ["Employee-Leave-Policy.pdf", "员工福利手册.docx", "考勤与加班管理办法.pdf"]
BROKEN = "Damaged-Policy.pdf"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """Three real sample files (PDF and DOCX, English and Chinese) and one damaged PDF."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in FILES:
        shutil.copy(SAMPLES / name, folder)
    (folder / BROKEN).write_bytes(b"%PDF-1.7\n" + b"\x00 not a pdf body " * 50)
    return folder


def snapshot(settings: Settings) -> dict[str, Any]:
    """What a run leaves in the store: documents, live chunks with their terms, vectors."""
    store = open_store(settings)
    try:
        documents = {
            r.meta.id: (r.meta, r.status, r.reason, r.chunk_count)
            for r in store.ledger.documents()
        }
        table = store.ledger.chunk_table()
        vectors = store.vectors.vectors(store.collection, table.ids)
        chunks = list(
            zip(table.ids, table.doc_ids, table.ordinals, table.texts, table.sections, table.pages,
                table.tokens, strict=True)
        )
        return {"documents": documents, "chunks": chunks, "vectors": vectors}
    finally:
        store.close()


def ingest(settings: Settings, docs: Path, workers: int) -> IngestReport:
    store = open_store(settings)
    try:
        return pipeline.ingest_paths(store, [docs], workers=workers)
    finally:
        store.close()


@pytest.mark.slow  # two full ingests of the samples
def test_two_workers_make_the_store_one_worker_makes(
    make_settings: Any, docs: Path, tmp_path: Path
) -> None:
    # each store with its own embedding cache (in its folder): nothing is shared between runs
    one = make_settings(store=tmp_path / "one", embed={"cache": ""})
    two = make_settings(store=tmp_path / "two", embed={"cache": ""})
    report_one = ingest(one, docs, workers=1)
    report_two = ingest(two, docs, workers=2)

    # the same outcomes, in the same order, the damaged file failed and the batch went on
    assert [(o.path, o.outcome, o.status, o.chunks) for o in report_two.outcomes] == [
        (o.path, o.outcome, o.status, o.chunks) for o in report_one.outcomes
    ]
    assert report_two.counts == {
        "ingested": 3, "updated": 0, "unchanged": 0, "removed": 0, "failed": 1, "skipped": 0
    }
    assert report_two.embedded == report_one.embedded > 0

    first, second = snapshot(one), snapshot(two)
    assert second["documents"] == first["documents"]
    assert second["chunks"] == first["chunks"] and len(first["chunks"]) > 20
    assert first["vectors"].shape == second["vectors"].shape
    assert np.abs(first["vectors"]).sum() > 0
    # one worker embeds several files' passages per batch (ingest/embed_ahead.py), the workers one
    # file's: other batch shapes, which float32 sums in another order (within 1e-6)
    np.testing.assert_allclose(second["vectors"], first["vectors"], atol=1e-6)
    assert np.einsum("ij,ij->i", first["vectors"], second["vectors"]).min() > 0.999999
    assert store_problems(two) == []

    # run again with two workers: nothing changed, nothing is embedded
    again = ingest(two, docs, workers=2)
    assert again.counts["unchanged"] == 4 and again.embedded == 0

    # new versions through the workers: a document with one paragraph more keeps its other
    # passages (only the new ones are upserted), a replaced one switches
    extended = docs / "员工福利手册.docx"
    document = docx.Document(str(extended))
    document.add_paragraph("员工每年可享受一次免费体检，费用由公司承担。")
    document.save(str(extended))
    shutil.copy(SAMPLES / "New-Hire-Onboarding-Guide.pdf", docs / FILES[0])  # a new text
    updated = ingest(two, docs, workers=2)
    assert updated.counts["updated"] == 2 and updated.counts["unchanged"] == 2
    doc_id = doc_id_for(str(docs.resolve()), extended.name)
    before = {c[0] for c in first["chunks"] if c[1] == doc_id}
    after = {c[0] for c in snapshot(two)["chunks"] if c[1] == doc_id}
    assert len(before) > 5 and len(before & after) >= len(before) - 2  # its passages stayed
    assert after - before  # and the new paragraph's passage came in
    assert store_problems(two) == []
