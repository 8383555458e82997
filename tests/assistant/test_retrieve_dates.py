"""Policy dates in retrieval: the sample travel policies 2023 and 2024 (data/samples, with their
series sidecars) in a real store (ledger, Chroma, files), asked on fixed days through a clock
passed in. A document is retrieved only while in force; a version not yet in force replaces no
other; an answer citing a document past its review says so; a long-running retriever follows
the day without rebuilding its index."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from assistant.answer import Assistant
from assistant.answer_json import answer_to_json
from assistant.approved.answers import Draft, Ref
from assistant.retrieve.retriever import Retriever
from core.config import Settings
from core.text import split_sentences
from ingest.dates import set_dates
from store.store import Store, open_store
from tests.support.fakes import FakeCounter, FakeGenerator
from tests.support.stores import ingest_paths

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "docs"
OLD, NEW = "差旅费管理办法-2023.pdf", "差旅费管理办法-2024.pdf"
QUESTION = "一线城市住宿标准是多少？"


class Clock:
    """Today's date as the test sets it."""

    def __init__(self, day: dt.date) -> None:
        self.day = day

    def __call__(self) -> dt.date:
        return self.day


@pytest.fixture
def travel(make_settings, tmp_path: Path) -> Settings:  # type: ignore[no-untyped-def]
    """A store of the two travel policies, with their sidecars (series, version, effective)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for year in ("2023", "2024"):
        for path in SAMPLES.glob(f"差旅费管理办法-{year}.*"):
            shutil.copy2(path, docs / path.name)
    settings: Settings = make_settings()
    report = ingest_paths(settings, [docs])
    assert report.counts["ingested"] == 2, report.outcomes
    return settings


@pytest.fixture
def store(travel: Settings) -> Iterator[Store]:
    with closing(open_store(travel)) as opened:
        yield opened


def files(retriever: Retriever) -> dict[str, bool]:
    """The files of the retrieved passages -> whether they were marked superseded."""
    passages = retriever.retrieve(QUESTION, ["all"], k=10).passages
    return {p.file: p.superseded for p in passages}


def test_a_document_is_retrieved_from_effective_through_expires(store: Store) -> None:
    set_dates(store, OLD, {"expires": "2023-12-31"})
    clock = Clock(dt.date(2022, 12, 31))
    retriever = Retriever(store.settings, store, today=clock)
    assert files(retriever) == {}  # neither in force yet
    clock.day = dt.date(2023, 6, 1)  # 2023 in force; 2024 not yet, and so it replaces nothing
    assert files(retriever) == {OLD: False}
    clock.day = dt.date(2023, 12, 31)  # its last day
    assert files(retriever) == {OLD: False}
    clock.day = dt.date(2024, 1, 1)  # expired; the 2024 version applies
    assert files(retriever) == {NEW: False}


def test_without_an_expiry_the_older_version_stays_superseded(store: Store) -> None:
    """No expiry given: as before, the 2024 version prevails and 2023's passages are marked."""
    retriever = Retriever(store.settings, store, today=Clock(dt.date(2026, 12, 3)))
    found = files(retriever)
    assert found[NEW] is False and found.get(OLD) is True


def test_a_version_that_has_expired_still_replaces_the_one_before(store: Store) -> None:
    """An expired newest version ends the series: the version it replaced stays superseded."""
    set_dates(store, NEW, {"expires": "2024-12-31"})
    retriever = Retriever(store.settings, store, today=Clock(dt.date(2025, 3, 1)))
    assert files(retriever) == {OLD: True}


def test_the_day_changes_in_a_long_running_retriever_without_a_rebuild(store: Store) -> None:
    set_dates(store, OLD, {"expires": "2023-12-31"})
    clock = Clock(dt.date(2023, 12, 31))
    retriever = Retriever(store.settings, store, today=clock)
    assert OLD in files(retriever)
    snapshot = retriever.snapshot()
    clock.day = dt.date(2024, 1, 1)
    assert OLD not in files(retriever)
    assert retriever.snapshot() is snapshot  # the same BM25 index, masks drawn for the day


def test_set_dates_refresh_a_running_retriever(store: Store) -> None:
    retriever = Retriever(store.settings, store, today=Clock(dt.date(2026, 12, 3)))
    assert NEW in files(retriever)
    generation = store.ledger.generation()
    set_dates(store, NEW, {"expires": "2026-12-02"})
    assert store.ledger.generation() > generation
    assert NEW not in files(retriever)
    set_dates(store, NEW, {"expires": ""})  # cleared
    assert NEW in files(retriever)


def test_an_answer_citing_a_document_past_its_review_says_so(store: Store) -> None:
    set_dates(store, NEW, {"review_by": "2024-06-30"})
    clock = Clock(dt.date(2024, 6, 30))
    assistant = Assistant(store, FakeGenerator(), FakeCounter(), today=clock)  # model down
    on_time = assistant.ask(QUESTION, ["all"])
    assert on_time.citations and not any(c.review_due for c in on_time.citations)
    clock.day = dt.date(2024, 7, 1)
    late = assistant.ask(QUESTION, ["all"])
    assert late.mode == "retrieval_only"
    cited = {c.file: c.review_due for c in late.citations}
    assert cited[NEW] == "2024-06-30" and cited.get(OLD, "") == ""
    shown = answer_to_json(late)
    assert {c["file"]: c["review_due"] for c in shown["citations"]}[NEW] == "2024-06-30"
    assert all(p["review_due"] in (None, "2024-06-30") for p in shown["passages"])


def test_an_approved_answer_is_served_only_while_its_documents_are_in_force(
        store: Store) -> None:
    clock = Clock(dt.date(2025, 6, 1))
    assistant = Assistant(store, FakeGenerator(), FakeCounter(), today=clock)
    cited = next(p for p in assistant.retrieve(QUESTION, ["all"]) if p.file == NEW)
    said = split_sentences(cited.text.split("\n")[-1])[0]  # the passage's own words
    assistant.save_approved(Draft(QUESTION, f"{said}[1]", [Ref(cited.chunk_id)], ["all"]),
                            "alice")
    assert assistant.ask(QUESTION, ["all"]).mode == "approved"
    set_dates(store, NEW, {"review_by": "2025-05-01"})  # its card says the review is overdue
    late = assistant.ask(QUESTION, ["all"])
    assert late.mode == "approved" and late.citations[0].review_due == "2025-05-01"
    set_dates(store, NEW, {"expires": "2025-05-31"})
    assert assistant.ask(QUESTION, ["all"]).mode != "approved"  # expired: not served
    clock.day = dt.date(2025, 5, 31)  # its last day in force
    assert assistant.ask(QUESTION, ["all"]).mode == "approved"
