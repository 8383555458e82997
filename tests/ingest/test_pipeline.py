"""Ingestion end to end: real PDF/DOCX files, real Chroma, the real embedder."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import docx
import pytest
from click.testing import CliRunner

from assistant.answer_json import passage_to_json
from assistant.retrieve.retriever import Retriever
from devtools.postgres import with_ledger
from ingest import pipeline
from ingest import reindex as reindexing
from ingest.discover import discover
from store.embed.embedder import CachedEmbedder, open_embedder
from store.lazy_vectors import LazyVectorIndex
from store.ledger import Ledger
from store.store import Store, embed_cache_path, open_ledger, open_store
from store.vectors import open_vector_index
from tests.support.fake_soffice import install_fake_soffice
from tests.support.fakes import FakeEmbedder, MemoryVectorIndex
from tests.support.stores import (
    delete_document,
    ingest_paths,
    reindex,
    store_problems,
    store_status,
)
from ui.cli import main

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    target = tmp_path / "docs"
    shutil.copytree(SAMPLES, target)
    return target


def live_chunks(settings) -> dict[str, tuple[str, str]]:
    ledger = open_ledger(settings)
    try:
        return {
            r[0]: (r[1], r[2]) for r in ledger.db.execute("SELECT id, doc_id, text FROM chunks")
        }
    finally:
        ledger.close()


def vector_ids(settings) -> set[str]:
    store = open_store(settings)
    try:
        return store.vectors.all_ids(store.collection)
    finally:
        store.close()


def test_samples_ingest_reingest_and_groups(make_settings, samples: Path) -> None:
    settings = make_settings()
    first = ingest_paths(settings, [samples])
    assert first.counts["ingested"] == 11 and first.counts["failed"] == 0
    assert set(live_chunks(settings)) == vector_ids(settings)

    again = ingest_paths(settings, [samples])
    assert again.counts == {"ingested": 0, "updated": 0, "unchanged": 11, "removed": 0,
                            "failed": 0, "skipped": 0}
    assert again.embedded == 0

    store = open_store(settings)
    try:
        docs = {Path(r.meta.path).name: r.meta for r in store.ledger.documents()}
        assert docs["薪酬等级表.docx"].groups == ("hr",)
        assert docs["Employee-Leave-Policy.pdf"].groups == ("all",)
        assert docs["差旅费管理办法-2024.pdf"].series == "travel-expenses-zh"
        assert docs["差旅费管理办法-2024.pdf"].lang == "zh"
        retriever = Retriever(settings, store)
        public = retriever.retrieve("薪酬等级 工资范围", ["all"], k=20).passages
        assert public and all(p.groups == ("all",) for p in public)
        hr = retriever.retrieve("薪酬等级 工资范围", ["hr"], k=20).passages
        assert hr and all("hr" in p.groups for p in hr)
        travel = retriever.retrieve("一线城市住宿标准是多少？", ["all"], k=5).passages
        assert travel[0].file.endswith("2024.pdf") and not travel[0].superseded
        assert any(
            p.superseded
            for p in retriever.retrieve("2023 一线城市住宿标准", ["all"], k=10).passages
        )
    finally:
        store.close()


def test_changed_file_replaces_only_its_own_chunks(
    make_settings, samples: Path, ledger_url: str
) -> None:
    """On both ledgers (SQLite, PostgreSQL)."""
    settings = with_ledger(make_settings(), ledger_url)
    ingest_paths(settings, [samples])
    before = live_chunks(settings)
    target = samples / "IT-Security-Policy.docx"
    document = docx.Document(str(target))
    # text of its own per ledger: the session's embedding cache must not have it yet
    kind = "postgres" if ledger_url else "sqlite"
    document.add_paragraph(f"Badges must be worn visibly at all times inside the {kind} office.")
    document.save(str(target))

    report = ingest_paths(settings, [samples])
    assert report.counts["updated"] == 1 and report.counts["unchanged"] == 10
    after = live_chunks(settings)
    doc_id = next(d for d, t in after.values() if "Badges must be worn" in t)
    assert {c for c, (d, _) in before.items() if d != doc_id} == {
        c for c, (d, _) in after.items() if d != doc_id
    }
    kept = {c for c, (d, _) in before.items() if d == doc_id} & set(after)
    assert kept, "unchanged sections of the edited document keep their chunk ids"
    assert set(after) == vector_ids(settings)
    assert 0 < report.embedded < 5


def test_passages_of_several_files_are_embedded_together_in_file_order(
    make_settings, samples: Path, monkeypatch
) -> None:
    """ingest.embed_wave: the embedder gets the passages of several files in one call, and the
    files are still committed one by one in the order they were found, a bad one among them."""
    (samples / "broken.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    calls: list[int] = []
    original = CachedEmbedder.embed_batch

    def counting(self: CachedEmbedder, texts):  # type: ignore[no-untyped-def]
        calls.append(len(texts))
        return original(self, texts)

    monkeypatch.setattr(CachedEmbedder, "embed_batch", counting)
    # the passage embedder alone (the multilingual space embeds through the same cache class)
    settings = make_settings(ingest={"embed_wave": 64}, embed={"multilingual_model": ""})
    report = ingest_paths(settings, [samples])
    assert report.counts["ingested"] == 11 and report.counts["failed"] == 1
    assert [o.path for o in report.outcomes] == [str(p) for _, p in discover([samples])]
    assert sum(calls) == len(live_chunks(settings))
    assert len(calls) < 11  # 11 files with passages: waves span files
    assert store_problems(settings) == []


def test_the_embedder_and_jieba_are_loaded_once_while_the_first_file_parses(
    make_settings, tmp_path: Path, monkeypatch
) -> None:
    """The warm-up thread loads the embedder (once: the writer waits for it) and jieba's
    dictionary, even for English files, and is done when the run returns."""
    import core.text

    folder = tmp_path / "english"
    folder.mkdir()
    for name in ("Employee-Leave-Policy.pdf", "Code-of-Conduct.docx"):
        shutil.copy(SAMPLES / name, folder)
    monkeypatch.setattr(core.text, "_jieba", None)
    settings = make_settings()
    loads: list[str] = []

    def source():  # type: ignore[no-untyped-def]
        loads.append("embedder")
        return open_embedder(settings.embed, embed_cache_path(settings))

    store = Store(settings, open_ledger(settings), open_vector_index(settings), source)
    try:
        report = pipeline.ingest_paths(store, [folder])
    finally:
        store.close()
    assert report.counts["ingested"] == 2
    assert loads == ["embedder"]
    assert core.text._jieba is not None  # no Chinese text: only the warm-up loads it


def test_a_changed_english_file_does_not_load_jieba(
    make_settings, tmp_path: Path, monkeypatch
) -> None:
    """Only a file that is new, or was not English last time, has the warm-up load jieba."""
    import core.text

    folder = tmp_path / "english"
    folder.mkdir()
    shutil.copy(SAMPLES / "Code-of-Conduct.docx", folder)
    settings = make_settings()
    ingest_paths(settings, [folder])
    document = docx.Document(str(folder / "Code-of-Conduct.docx"))
    document.add_paragraph("Gifts above fifty euros are declared to the compliance office.")
    document.save(str(folder / "Code-of-Conduct.docx"))
    monkeypatch.setattr(core.text, "_jieba", None)
    assert ingest_paths(settings, [folder]).counts["updated"] == 1
    assert core.text._jieba is None


def test_the_warm_up_opens_a_lazy_chroma_too(make_settings) -> None:
    """The CLI's store opens Chroma on first use: the warm-up thread opens it beside the parse,
    so the first changed file does not wait for Chroma's import."""
    settings = make_settings()
    store = open_store(settings, lazy_vectors=True)
    try:
        assert isinstance(store.vectors, LazyVectorIndex) and not store.vectors.opened
        pipeline._warm_up(store)
        assert store.vectors.opened
    finally:
        store.close()


def test_prune_and_delete(make_settings, samples: Path) -> None:
    settings = make_settings()
    ingest_paths(settings, [samples])
    (samples / "Code-of-Conduct.docx").unlink()
    report = ingest_paths(settings, [samples], prune=True)
    assert report.counts["removed"] == 1
    assert not any(
        "gifts" in t.lower() and "conduct" in t.lower() for _, t in live_chunks(settings).values()
    )
    record = delete_document(settings, "员工福利手册.docx")
    assert record.chunk_count > 0
    assert set(live_chunks(settings)) == vector_ids(settings)
    assert store_status(settings)["documents"] == 9


@pytest.mark.slow  # a full re-index of the samples
def test_full_reindex_switches_collection_and_keeps_answers(
    make_settings, samples: Path, ledger_url: str
) -> None:
    """On both ledgers (SQLite, PostgreSQL)."""
    settings = with_ledger(make_settings(), ledger_url)
    ingest_paths(settings, [samples])
    questions = [
        "How many days of unused annual leave can be carried over?",
        "一线城市住宿标准是多少？",
    ]

    def top_ids() -> list[list[str]]:
        store = open_store(settings)
        try:
            retriever = Retriever(settings, store)
            return [
                [p.chunk_id for p in retriever.retrieve(q, ["all", "hr"]).passages]
                for q in questions
            ]
        finally:
            store.close()

    before, old_collection = top_ids(), store_status(settings)["collection"]
    report = reindex(settings, full=True)
    status = store_status(settings)
    assert report.counts["failed"] == 0 and report.embedded == 0  # all from the cache
    assert status["collection"] != old_collection
    assert status["vectors"] == status["chunks"]
    store = open_store(settings)
    try:
        assert old_collection not in store.vectors.collections()
    finally:
        store.close()
    assert top_ids() == before


def test_crash_before_the_switch_keeps_the_old_version(
    make_settings, samples: Path, monkeypatch
) -> None:
    """A crash after the new vectors are written but before the ledger switches: the old
    version stays live (never both), and the next run cleans up and finishes the job."""
    settings = make_settings()
    ingest_paths(settings, [samples])
    target = samples / "Code-of-Conduct.docx"
    document = docx.Document(str(target))
    document.add_paragraph("Employees may not accept cryptocurrency gifts of any value.")
    document.save(str(target))

    def crash(*args, **kwargs):
        raise KeyboardInterrupt  # as if killed between the Chroma upsert and the ledger commit

    monkeypatch.setattr(Ledger, "replace_document", crash)
    with pytest.raises(KeyboardInterrupt):
        ingest_paths(settings, [samples])
    monkeypatch.undo()
    live = live_chunks(settings)
    assert not any("cryptocurrency" in t for _, t in live.values())
    assert vector_ids(settings) > set(live)  # orphans of the new version exist in Chroma only
    store = open_store(settings)
    try:
        passages = (
            Retriever(settings, store).retrieve("cryptocurrency gifts", ["all"], k=20).passages
        )
        assert not any("cryptocurrency" in p.text for p in passages)
    finally:
        store.close()

    report = ingest_paths(settings, [samples])
    assert report.counts["updated"] == 1
    live = live_chunks(settings)
    assert any("cryptocurrency" in t for _, t in live.values())
    assert vector_ids(settings) == set(live)


@pytest.mark.slow  # `kb ingest` in a new process
def test_bad_files_get_a_status_and_the_batch_goes_on(
    make_settings, tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(SAMPLES / "Employee-Leave-Policy.pdf", folder)
    for name in (
        "pdf/unstructured/password.pdf",
        "pdf/sample-files/007-imagemagick-images-only.pdf",
        "docx/unstructured/simple.doc",
        "docx/mammoth/empty.docx",
    ):
        shutil.copy(shared / "corpus" / name, folder)
    (folder / "notes.txt").write_text("not a policy")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    settings = make_settings()
    # a fake LibreOffice turns simple.doc into a document; `kb` runs in a new process, as parse
    # workers keep the PATH of the process's first ParsePool
    fake = install_fake_soffice(tmp_path, monkeypatch)
    result = subprocess.run(
        [sys.executable, "-c", "from ui.cli import main; main()", "ingest", str(folder),
         "--store", str(settings.store_path()), "--quiet"],
        cwd=REPO, env={**fake.env(), "KB_EMBED_CACHE": settings.embed.cache},
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ingested 2, unchanged 0, updated 0, removed 0, failed 5" in result.stdout
    assert [call[-1].endswith("/simple.doc") for call in fake.calls()] == [True]
    docs = json.loads(
        CliRunner().invoke(main, ["docs", "--json", "--store", str(settings.store_path())]).output
    )
    statuses = {d["path"]: d["status"] for d in docs}
    assert statuses == {
        "Employee-Leave-Policy.pdf": "ok",
        "password.pdf": "encrypted",
        "007-imagemagick-images-only.pdf": "no_text",
        "simple.doc": "ok",
        "empty.docx": "no_text",
        "notes.txt": "unsupported",
        "broken.pdf": "broken",
    }
    reasons = {d["path"]: d["reason"] for d in docs}
    assert "pdf_passwords" in reasons["password.pdf"]

    # a password in config opens the encrypted file on the next run, without touching the rest
    settings_pw = make_settings(
        store=settings.store_path(), ingest={"pdf_passwords": ("password",)}
    )
    report = ingest_paths(settings_pw, [folder])
    assert [
        o.path.endswith("password.pdf") for o in report.outcomes if o.outcome == "ingested"
    ] == [True]


@pytest.mark.slow  # parses every gold file of ../shared
def test_gold_quotes_survive_parsing_and_chunking(make_settings, shared: Path) -> None:
    """For every gold quote of the public set, some chunk of the gold file (whose page span
    includes the gold page, for PDFs) contains it once all whitespace is removed."""
    settings = make_settings(ingest={"folder_groups": {}})
    report = ingest_paths(settings, [shared / "eval" / "public" / "docs"])
    assert report.counts["ingested"] == 15
    ledger = Ledger(settings.store_path() / "ledger.sqlite")
    try:
        rows = ledger.db.execute(
            "SELECT d.path, c.text, c.page, c.page_end FROM chunks c "
            "JOIN documents d ON d.id = c.doc_id"
        ).fetchall()
    finally:
        ledger.close()
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    found = total = 0
    for line in (shared / "eval" / "public" / "qa.jsonl").read_text("utf-8").splitlines():
        for gold in json.loads(line)["gold"]:
            total += 1
            quote = squash(gold["quote"])
            found += any(
                path == gold["file"]
                and quote in squash(text)
                and (gold["page"] is None or page <= gold["page"] <= (page_end or page))
                for path, text, page, page_end in rows
            )
    assert total == 89
    assert found / total >= 0.98, f"{found}/{total} gold quotes found in chunks"


def test_printed_page_labels_reach_the_passages(make_settings, fixtures, tmp_path: Path) -> None:
    docs = tmp_path / "labelled"
    docs.mkdir()
    shutil.copy(fixtures["english"], docs / "english.pdf")  # pages labelled i, ii, iii
    settings = make_settings()
    ingest_paths(settings, [docs])
    store = open_store(settings)
    try:
        (record,) = store.ledger.documents()
        assert record.meta.page_labels == ("i", "ii", "iii")
        passages = Retriever(settings, store).retrieve("doctor's note sick leave", ["all"]).passages
    finally:
        store.close()
    sick = next(p for p in passages if "doctor's note" in p.text)
    assert (sick.page, sick.page_end, sick.page_label) == (2, 3, "ii–iii")
    assert passage_to_json(sick, 1)["page_label"] == "ii–iii"


def test_a_store_from_before_page_labels_is_migrated(make_settings, samples: Path) -> None:
    settings = make_settings()
    ingest_paths(settings, [samples])
    path = settings.store_path() / "ledger.sqlite"
    ledger = Ledger(path)
    with ledger.transaction() as db:  # the ledger as version 002 left it
        db.execute("ALTER TABLE documents DROP COLUMN page_labels")
        db.execute("DELETE FROM migrations WHERE name = '003_page_labels'")
    ledger.close()
    ledger = Ledger(path)
    try:
        records = ledger.documents()
    finally:
        ledger.close()
    assert len(records) == 11 and all(r.meta.page_labels == () for r in records)


@pytest.mark.slow  # embeds a file of many passages
def test_chunks_per_file_are_capped(make_settings, tmp_path: Path) -> None:
    """A file that chunks into more than ingest.max_chunks passages gets its own status; its
    previous version stays searchable, through an ingest and through a full re-index."""
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(SAMPLES / "Code-of-Conduct.docx", folder)

    def fake_store(max_chunks: int) -> Store:
        settings = make_settings(ingest={"max_chunks": max_chunks})
        ledger = Ledger(settings.store_path() / "ledger.sqlite")
        return Store(settings, ledger, vectors, FakeEmbedder())

    vectors = MemoryVectorIndex()
    store = fake_store(1000)
    assert pipeline.ingest_paths(store, [folder]).counts["ingested"] == 1
    store.close()

    store = fake_store(3)
    document = docx.Document(str(folder / "Code-of-Conduct.docx"))
    document.add_paragraph("A new version, with too many passages for the new limit.")
    document.save(str(folder / "Code-of-Conduct.docx"))
    report = pipeline.ingest_paths(store, [folder])
    assert [(o.status, "ingest.max_chunks = 3" in o.reason) for o in report.outcomes] == [
        ("too_many_chunks", True)
    ]
    full = reindexing.reindex(store, full=True)
    assert [o.status for o in full.outcomes] == ["too_many_chunks"]
    record = store.ledger.documents()[0]
    assert record.status == "too_many_chunks" and record.searchable
    store.close()
