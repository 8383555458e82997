"""One writer at a time (issue 11): a second writer that starts while a run holds the store is
refused (or waits), so a full re-index racing an ingest, or two ingests, never lose documents.

The races are made deterministic by running the second writer from inside the first, right after
its first vector write: the moment the issue's reproductions hit by timing.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from assistant.retrieve.retriever import Retriever
from core.config import Settings
from core.errors import StoreError
from devtools.postgres import with_ledger
from ingest import pipeline
from ingest.reindex import reindex
from ingest.writer import recover
from store.ledger import KEPT_NOTE, Ledger
from store.store import Store, open_ledger, open_store
from tests.support.fakes import FakeEmbedder, MemoryVectorIndex
from tests.support.stores import ingest_paths, list_documents, store_problems
from tests.support.stores import reindex as reindex_settings

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"


class AfterFirstUpsert:
    """The store's vector index, running `then()` once right after the first upsert."""

    def __init__(self, inner: Any, then: Callable[[], None]) -> None:
        self.inner = inner
        self.then: Callable[[], None] | None = then

    def upsert(self, *args: Any, **kwargs: Any) -> None:
        self.inner.upsert(*args, **kwargs)
        then, self.then = self.then, None
        if then:
            then()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def waiting(settings: Settings, seconds: float) -> Settings:
    """`settings` whose second writer waits `seconds` for the lock."""
    return replace(settings, store=replace(settings.store, lock_wait_s=seconds))


def copy_docs(target: Path, names: list[str]) -> Path:
    target.mkdir(parents=True)
    for name in names:
        shutil.copy(SAMPLES / name, target)
    return target


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    """A store's documents and two new ones to ingest while it is being written."""
    old = copy_docs(
        tmp_path / "old",
        ["Code-of-Conduct.docx", "Employee-Leave-Policy.pdf", "IT-Security-Policy.docx"],
    )
    new = copy_docs(tmp_path / "new", ["New-Hire-Onboarding-Guide.pdf", "员工福利手册.docx"])
    return old, new


def second_writer(settings: Any, paths: list[Path], errors: list[Exception]) -> Callable[[], None]:
    def run() -> None:
        try:
            ingest_paths(settings, paths)
        except StoreError as exc:
            errors.append(exc)

    return run


def racing(settings: Any, then: Callable[[], None]) -> Store:
    store = open_store(settings)
    store.vectors = AfterFirstUpsert(store.vectors, then)
    return store


@pytest.mark.slow  # a full re-index of the corpus
def test_an_ingest_during_a_full_reindex_is_refused_and_nothing_is_lost(
    make_settings, corpus: tuple[Path, Path], ledger_url: str
) -> None:
    """On both ledgers: the file lock, and PostgreSQL's advisory lock."""
    old, new = corpus
    settings = waiting(with_ledger(make_settings(), ledger_url), 0.0)
    ingest_paths(settings, [old])
    errors: list[Exception] = []
    store = racing(settings, second_writer(settings, [new], errors))
    try:
        reindex(store, full=True)
    finally:
        store.close()
    assert store_problems(settings) == []
    assert len(errors) == 1 and "is being written by `kb reindex --full`" in str(errors[0])
    # the refused ingest, run again, completes
    assert ingest_paths(settings, [new]).counts["ingested"] == 2
    assert store_problems(settings) == []


def test_a_second_ingest_never_collects_the_first_ones_vectors(
    make_settings, corpus: tuple[Path, Path]
) -> None:
    old, new = corpus
    settings = waiting(make_settings(), 0.0)
    errors: list[Exception] = []
    store = racing(settings, second_writer(settings, [new], errors))
    try:
        pipeline.ingest_paths(store, [old])
    finally:
        store.close()
    assert store_problems(settings) == []
    assert len(errors) == 1 and "is being written by `kb ingest`" in str(errors[0])


def test_a_second_writer_waits_for_the_first(
    make_settings, corpus: tuple[Path, Path], caplog: pytest.LogCaptureFixture, ledger_url: str
) -> None:
    old, new = corpus
    settings = waiting(with_ledger(make_settings(), ledger_url), 60.0)
    holder = open_store(settings)
    released = threading.Event()

    def hold() -> None:
        with holder.writing("kb test-holder"):
            time.sleep(1.0)
        released.set()

    thread = threading.Thread(target=hold)
    thread.start()
    time.sleep(0.2)
    try:
        report = ingest_paths(settings, [old])
    finally:
        thread.join()
        holder.close()
    assert released.is_set() and report.counts["ingested"] == 3
    assert "is being written by `kb test-holder` (pid" in caplog.text
    assert "kb ingest waits up to 60s" in caplog.text
    assert store_problems(settings) == []


def test_a_full_reindex_refuses_to_swap_when_the_ledger_moved(
    make_settings, corpus: tuple[Path, Path], ledger_url: str
) -> None:
    """A writer that bypasses the lock (an older kb, a hand edit) changes the ledger during a
    full re-index: the re-index switches nothing, and the next run finishes the job."""
    old, _ = corpus
    settings = with_ledger(make_settings(), ledger_url)
    ingest_paths(settings, [old])
    store = open_store(settings)
    victim = store.ledger.documents()[0].meta.id

    def bypass() -> None:
        ledger = open_ledger(settings)
        try:
            ledger.delete_document(victim)
        finally:
            ledger.close()

    store.vectors = AfterFirstUpsert(store.vectors, bypass)
    try:
        with pytest.raises(StoreError, match="changed during the full re-index"):
            reindex(store, full=True)
        assert store.ledger.document(victim) is None
    finally:
        store.close()
    report = ingest_paths(settings, [old])
    assert report.counts["ingested"] == 1
    assert store_problems(settings) == []


@pytest.mark.slow  # several ingests of the corpus
def test_a_failed_new_version_keeps_the_previous_one_searchable(
    make_settings, corpus: tuple[Path, Path]
) -> None:
    """Issue 11, finding 2: the README promises it; `mark_failed` used to hide the document."""
    old, _ = corpus
    settings = make_settings()
    ingest_paths(settings, [old])
    target = old / "Code-of-Conduct.docx"
    question = "conflicts of interest gifts"

    def code_of_conduct_found() -> bool:
        store = open_store(settings)
        try:
            passages = Retriever(settings, store).retrieve(question, ["all"], k=10).passages
            return any(p.file.endswith("Code-of-Conduct.docx") for p in passages)
        finally:
            store.close()

    assert code_of_conduct_found()
    before = live_generation(settings)
    target.write_bytes(b"PK\x03\x04" + b"\x00damaged" * 100)  # a new version that fails
    assert ingest_paths(settings, [old]).counts["failed"] == 1
    record = next(r for r in list_documents(settings) if r.meta.path == target.name)
    assert record.status == "broken" and record.reason.endswith(KEPT_NOTE)
    assert record.chunk_count > 0 and live_generation(settings) > before
    assert code_of_conduct_found()
    # a full re-index carries the previous version over, still searchable
    reindex_settings(settings, full=True)
    assert code_of_conduct_found()
    assert store_problems(settings) == []


def live_generation(settings: Settings) -> int:
    ledger = open_ledger(settings)
    try:
        return ledger.generation()
    finally:
        ledger.close()


def test_recovery_runs_only_under_the_write_lock(make_settings) -> None:
    settings = make_settings()
    ledger = Ledger(settings.store_path() / "ledger.sqlite")
    store = Store(settings, ledger, MemoryVectorIndex(), FakeEmbedder())
    try:
        with pytest.raises(RuntimeError, match="only inside store.writing"):
            recover(store)
        with store.writing("kb test"):
            recover(store)
    finally:
        store.close()


@pytest.mark.slow  # a full re-index of the corpus
def test_readers_keep_answering_through_a_full_reindex(
    make_settings, corpus: tuple[Path, Path]
) -> None:
    """Questions asked while a full re-index builds, switches and drops the old collection find
    the document every time (old or new version, never neither), and never fail."""
    old, _ = corpus
    settings = make_settings()
    ingest_paths(settings, [old])
    reader = open_store(settings)
    retriever = Retriever(settings, reader)
    done = threading.Event()
    found: list[bool] = []
    errors: list[Exception] = []

    def ask() -> None:
        while not done.is_set():
            try:
                passages = retriever.retrieve("annual leave carry over", ["all"], k=5).passages
                found.append(any(p.file == "Employee-Leave-Policy.pdf" for p in passages))
            except Exception as exc:  # noqa: BLE001  (any failure is the finding)
                errors.append(exc)

    thread = threading.Thread(target=ask)
    thread.start()
    try:
        reindex_settings(settings, full=True)
    finally:
        done.set()
        thread.join()
        reader.close()
    assert errors == [] and found and all(found), (errors[:1], len(found))


def test_a_killed_writers_advisory_lock_is_released(postgres: Any) -> None:
    """PostgreSQL ledger: a writer in another process holds the advisory lock; a second writer
    is refused, naming it; once the first is killed (SIGKILL) the lock is free at once."""
    import subprocess
    import sys

    from store.write_lock import AdvisoryLock

    url = postgres.database("killed_writer")
    code = (
        "import sys, time\n"
        "from store.ledger import Ledger\n"
        "from store.write_lock import AdvisoryLock\n"
        "with AdvisoryLock(Ledger(sys.argv[1]), 0).hold('kb killed-writer'):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(600)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code, url], cwd=REPO,
                             stdout=subprocess.PIPE, text=True)
    ledger = Ledger(url)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match=r"being written by `kb killed-writer` \(pid"):
            with AdvisoryLock(ledger, 0).hold("kb second"):
                pass
        child.kill()
        child.wait()
        started = time.monotonic()
        with AdvisoryLock(ledger, 10).hold("kb second"):
            waited = time.monotonic() - started
        assert waited < 2.0, waited
    finally:
        child.kill()
        child.wait()
        ledger.close()
