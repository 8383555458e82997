"""Folders kept in sync, on real folders of sample PDF and Word files, a real ledger, Chroma and
the embedder: files added, changed, renamed and deleted; the brake on a share emptied at once
or missing, and the admin's confirmation; the schedule driven by a clock of the test's own."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import docx
import pytest

from core.settings.sources import SourceSettings
from core.types import ApprovedAnswer, ApprovedCitation
from devtools.postgres import with_ledger
from ingest.discover import doc_id_for
from ingest.sync.folder import sync_source
from ingest.sync.schedule import keep_in_sync, source_states
from store.store import Store
from ui.wiring import store_for

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "docs"
FILES = ["Employee-Leave-Policy.pdf", "Code-of-Conduct.docx", "IT-Security-Policy.docx",
         "New-Hire-Onboarding-Guide.pdf", "日常费用报销规定.docx"]
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()


def copy_samples(folder: Path, names: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy2(SAMPLES / name, folder / name)
    return folder


@pytest.fixture
def share(tmp_path: Path) -> Path:
    """A folder standing for HR's file share, with five policies."""
    return copy_samples(tmp_path / "share" / "hr", FILES)


@pytest.fixture
def store(make_settings) -> Iterator[Store]:  # type: ignore[no-untyped-def]
    with store_for(make_settings()) as opened:
        yield opened


def hr(share: Path, every: float = 60.0) -> SourceSettings:
    return SourceSettings("hr", str(share.resolve()), ("hr",), every)


def documents(store: Store, share: Path) -> dict[str, list[str]]:
    """The source's documents: path -> its live chunk ids."""
    return {rel: sorted(store.ledger.chunk_ids(record.meta.id))
            for rel, record in store.ledger.source_documents(str(share.resolve())).items()}


def consistent(store: Store) -> bool:
    """Every live chunk has its vector and every vector a live chunk."""
    return set(store.ledger.chunk_ids()) == store.vectors.all_ids(store.collection)


def test_added_changed_renamed_and_deleted_files(store: Store, share: Path) -> None:
    source = hr(share)
    first = sync_source(store, source, 0.2, T0)
    assert (first.state, first.seen, first.changed, first.failed) == ("ok", 5, 5, 0)
    assert first.ingest is not None and first.ingest.counts["ingested"] == 5
    state = store.ledger.sync_state("hr")
    assert state is not None
    assert (state.last_run, state.next_run, state.seen, state.changed) == (T0, T0 + 60, 5, 5)
    records = store.ledger.source_documents(source.path)
    assert {r.meta.groups for r in records.values()} == {("hr",)}

    unchanged = sync_source(store, source, 0.2, T0 + 60)
    assert (unchanged.changed, unchanged.ingest) == (0, None)

    word = docx.Document(str(share / "Code-of-Conduct.docx"))
    word.add_paragraph("Synced addition: visitors sign the badge register at reception.")
    word.save(str(share / "Code-of-Conduct.docx"))
    changed = sync_source(store, source, 0.2, T0 + 120)
    assert changed.ingest is not None and changed.ingest.counts["updated"] == 1
    texts = [c.text for c, _ in store.ledger.chunks_of(doc_id_for(source.path,
                                                                  "Code-of-Conduct.docx"))]
    assert any("badge register" in text for text in texts)

    before = documents(store, share)
    cited = before["Employee-Leave-Policy.pdf"][0]
    approved = store.ledger.save_approved(ApprovedAnswer(
        0, "How many days of annual leave?", "See [1].", "alice", citations=(ApprovedCitation(
            1, cited, doc_id_for(source.path, "Employee-Leave-Policy.pdf"),
            records["Employee-Leave-Policy.pdf"].meta.sha256, "Employee-Leave-Policy.pdf"),)))
    (share / "archive").mkdir()
    (share / "Employee-Leave-Policy.pdf").rename(share / "archive" / "Leave-2026.pdf")
    renamed = sync_source(store, source, 0.2, T0 + 180)
    assert renamed.renamed == [("Employee-Leave-Policy.pdf", "archive/Leave-2026.pdf")]
    assert renamed.ingest is not None and renamed.ingest.embedded == 0
    assert renamed.ingest.counts["ingested"] == 0
    after = documents(store, share)
    assert "Employee-Leave-Policy.pdf" not in after
    assert after["archive/Leave-2026.pdf"] == before["Employee-Leave-Policy.pdf"]  # same ids
    moved = store.ledger.document(doc_id_for(source.path, "archive/Leave-2026.pdf"))
    assert moved is not None and moved.status == "ok" and moved.meta.groups == ("hr",)
    still = store.ledger.approved_answer(approved)  # an approved answer follows the move
    assert still is not None and still.status == "active"
    assert (still.citations[0].doc_id, still.citations[0].file) == (
        moved.meta.id, "archive/Leave-2026.pdf")

    (share / "IT-Security-Policy.docx").unlink()  # 1 of 5: 20%, not more
    deleted = sync_source(store, source, 0.2, T0 + 240)
    assert (deleted.state, deleted.deleted) == ("ok", ["IT-Security-Policy.docx"])
    assert sorted(documents(store, share)) == sorted(
        ["archive/Leave-2026.pdf", "Code-of-Conduct.docx", "New-Hire-Onboarding-Guide.pdf",
         "日常费用报销规定.docx"])
    assert consistent(store)


def test_the_brake_holds_deletes_until_the_files_return_or_an_admin_confirms(
        store: Store, share: Path, tmp_path: Path) -> None:
    source = hr(share)
    sync_source(store, source, 0.2, T0)
    aside = tmp_path / "aside"
    aside.mkdir()
    for name in FILES[:2]:
        shutil.move(share / name, aside / name)
    braked = sync_source(store, source, 0.2, T0 + 60)
    assert braked.state == "braked" and braked.deleted == []
    assert braked.reason.startswith("2 of 5 files vanished (40% > 20%); check the share is "
                                    "mounted, then `kb sync --confirm-deletes hr`")
    state = store.ledger.sync_state("hr")
    assert state is not None and (state.state, state.pending_deletes) == ("braked", 2)
    assert len(documents(store, share)) == 5

    for name in FILES[:2]:
        shutil.move(aside / name, share / name)
    back = sync_source(store, source, 0.2, T0 + 120)
    assert (back.state, back.reason, back.changed, back.ingest) == ("ok", "", 0, None)

    for name in FILES:  # the share unmounted: its mount point is an empty folder
        shutil.move(share / name, aside / name)
    empty = sync_source(store, source, 0.2, T0 + 180)
    assert empty.state == "braked" and "is empty while 5 of its files are known" in empty.reason
    share.rmdir()  # or gone altogether
    missing = sync_source(store, source, 0.2, T0 + 240)
    assert missing.state == "braked"
    assert f"folder {share.resolve()} is missing while 5 of its files are known" in missing.reason
    assert len(documents(store, share)) == 5

    confirmed = sync_source(store, source, 0.2, T0 + 300, confirm_deletes=True)
    assert (confirmed.state, len(confirmed.deleted)) == ("ok", 5)
    assert documents(store, share) == {} and store.ledger.chunk_ids() == []
    assert consistent(store)


def test_two_sources_never_touch_each_other(store: Store, share: Path, tmp_path: Path) -> None:
    finance = copy_samples(tmp_path / "share" / "finance", ["差旅费管理办法-2024.pdf"])
    other = SourceSettings("finance", str(finance.resolve()), ("finance",), 60.0)
    for source in (hr(share), other):
        sync_source(store, source, 0.2, T0)
    shutil.copy2(SAMPLES / "Code-of-Conduct.docx", finance / "Code-of-Conduct.docx")
    for name in FILES:
        (share / name).unlink()
    emptied = sync_source(store, hr(share), 0.2, T0 + 60, confirm_deletes=True)
    assert len(emptied.deleted) == 5 and emptied.renamed == []  # not renamed into finance
    kept = sync_source(store, other, 0.2, T0 + 60)
    assert kept.deleted == [] and kept.ingest is not None
    assert kept.ingest.counts["ingested"] == 1
    assert sorted(documents(store, finance)) == ["Code-of-Conduct.docx", "差旅费管理办法-2024.pdf"]
    assert {r.meta.groups for r in store.ledger.source_documents(other.path).values()} == {
        ("finance",)}


def test_the_schedule_follows_the_clock(store: Store, share: Path, tmp_path: Path,
                                        make_settings) -> None:  # type: ignore[no-untyped-def]
    """Each source runs when due (every 60 s and every 300 s), the loop sleeps until the next
    one is due; the clock and the sleep are the test's."""
    finance = copy_samples(tmp_path / "share" / "finance", ["差旅费管理办法-2024.pdf"])
    sources = (hr(share, every=60), SourceSettings("finance", str(finance.resolve()), (), 300))
    settings = dataclasses.replace(make_settings(store=store.path), sources=sources)
    now = [T0]
    ran: list[tuple[str, float]] = []

    def sleep(seconds: float) -> None:
        now[0] += seconds

    keep_in_sync(store, settings, lambda: now[0], sleep,
                 lambda r: ran.append((r.source.name, now[0] - T0)), lambda: now[0] >= T0 + 600)
    assert ran == [("hr", 0), ("finance", 0), *[("hr", t) for t in (60, 120, 180, 240, 300)],
                   ("finance", 300), *[("hr", t) for t in (360, 420, 480, 540)]]
    states = {s.name: s for s in source_states(store, sources)}
    assert states["finance"].next_run == T0 + 600 and states["hr"].next_run == T0 + 600


def test_sidecars_and_the_source_groups_are_followed_without_parsing_again(
        store: Store, tmp_path: Path) -> None:
    folder = copy_samples(tmp_path / "share" / "policies",
                          ["Code-of-Conduct.docx", "IT-Security-Policy.docx"])
    sidecar = folder / "Code-of-Conduct.meta.toml"
    sidecar.write_text('groups = ["hr"]\n', encoding="utf-8")
    source = SourceSettings("policies", str(folder.resolve()), (), 60.0)  # sidecars decide

    def groups() -> dict[str, tuple[str, ...]]:
        return {rel: r.meta.groups for rel, r in store.ledger.source_documents(
            source.path).items()}

    sync_source(store, source, 0.2, T0)
    assert groups() == {"Code-of-Conduct.docx": ("hr",), "IT-Security-Policy.docx": ("all",)}
    sidecar.write_text('groups = ["finance"]\ntitle = "Conduct"\n', encoding="utf-8")
    edited = sync_source(store, source, 0.2, T0 + 60)
    assert edited.ingest is not None and edited.ingest.embedded == 0
    assert edited.ingest.counts["updated"] == 1 and edited.ingest.counts["ingested"] == 0
    assert groups()["Code-of-Conduct.docx"] == ("finance",)
    store.settings = dataclasses.replace(store.settings, ingest=dataclasses.replace(
        store.settings.ingest, default_groups=("staff",)))  # config.toml edited
    defaults = sync_source(store, source, 0.2, T0 + 120)
    assert defaults.ingest is not None and defaults.ingest.embedded == 0
    assert groups() == {"Code-of-Conduct.docx": ("finance",), "IT-Security-Policy.docx": ("staff",)}
    regrouped = sync_source(store, dataclasses.replace(source, groups=("legal",)), 0.2, T0 + 180)
    assert regrouped.ingest is not None and regrouped.ingest.embedded == 0
    assert groups() == {"Code-of-Conduct.docx": ("legal",), "IT-Security-Policy.docx": ("legal",)}


def test_a_folder_that_never_was_fails_the_pass_and_says_so(store: Store, tmp_path: Path) -> None:
    typo = SourceSettings("typo", str(tmp_path / "nowhere"), (), 60.0)
    report = sync_source(store, typo, 0.2, T0)
    assert report.state == "failed"
    assert report.reason == f"folder {tmp_path / 'nowhere'} is missing; check the " \
                            "path and that it is mounted"
    state = store.ledger.sync_state("typo")
    assert state is not None and (state.state, state.next_run) == ("failed", T0 + 60)


def test_a_link_to_a_file_elsewhere_is_recorded_skipped_under_its_own_name(
        store: Store, tmp_path: Path) -> None:
    """A link is never followed (tests/ingest/test_untrusted_files.py has the why): the pass
    records it under its own name, with no passages, and names it in its reason."""
    folder = copy_samples(tmp_path / "share" / "links", ["IT-Security-Policy.docx"]).resolve()
    outside = copy_samples(tmp_path / "elsewhere", ["Code-of-Conduct.docx"])
    source = SourceSettings("links", str(folder), (), 60.0)
    sync_source(store, source, 0.2, T0)
    (folder / "conduct.docx").symlink_to(outside / "Code-of-Conduct.docx")
    report = sync_source(store, source, 0.2, T0 + 60)  # the link alone is new
    assert report.state == "ok" and report.ingest is not None
    assert report.ingest.counts == {"ingested": 0, "updated": 0, "unchanged": 0, "removed": 0,
                                    "failed": 0, "skipped": 1}
    assert (report.failed, report.skipped) == (0, ["conduct.docx"])
    assert report.reason == "symbolic links skipped, not followed: conduct.docx"
    docs = documents(store, folder)
    assert sorted(docs) == ["IT-Security-Policy.docx", "conduct.docx"]
    assert docs["conduct.docx"] == []


def test_a_rename_and_the_brake_on_both_ledgers(  # type: ignore[no-untyped-def]
        make_settings, ledger_url: str, tmp_path: Path) -> None:
    """The same pass on SQLite and on PostgreSQL: a document moved in one transaction, the
    deletes held back, and confirmed."""
    share = copy_samples(tmp_path / "share" / "hr", FILES[:2])
    source = hr(share)
    with store_for(with_ledger(make_settings(), ledger_url)) as store:
        sync_source(store, source, 0.2, T0)
        before = documents(store, share)
        (share / "Code-of-Conduct.docx").rename(share / "conduct-2026.docx")
        moved = sync_source(store, source, 0.2, T0 + 60)
        assert moved.renamed == [("Code-of-Conduct.docx", "conduct-2026.docx")]
        assert documents(store, share)["conduct-2026.docx"] == before["Code-of-Conduct.docx"]
        (share / "conduct-2026.docx").unlink()
        braked = sync_source(store, source, 0.2, T0 + 120)
        assert braked.state == "braked" and len(documents(store, share)) == 2
        confirmed = sync_source(store, source, 0.2, T0 + 180, confirm_deletes=True)
        assert confirmed.deleted == ["conduct-2026.docx"] and consistent(store)
        state = store.ledger.sync_state("hr")
        assert state is not None and (state.state, state.deleted) == ("ok", 1)
