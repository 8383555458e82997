"""Files that anyone who may write to a shared folder controls, through `kb sync`, `kb ingest`
and `kb docs` as an admin types them (click's runner, a config naming real folders, a real
store with Chroma and the embedder), then retrieval as a user of the share's group: symbolic
links (to another source's file, to a file outside every source, to a folder) are reported
skipped and nothing they point to is searchable, a folder swapped for a link after the walk is
not read, a file swapped between its hashing and its parse is recorded under the hash of the
bytes parsed, and a file name with a newline cannot forge a line of `kb docs`."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assistant.retrieve.retriever import Retriever
from core.config import Settings, load_settings
from core.errors import AccessDenied, SymbolicLink
from core.settings.sources import SourceSettings
from ingest import triage
from ingest.discover import doc_id_for, sha256_file
from ingest.parse import ParsePool
from ingest.pipeline import ingest_paths
from ingest.sync.folder import sync_source
from store.store import Store
from ui.cli import main
from ui.wiring import open_assistant, store_for

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"
HR_PDF = "Compensation-Review-Guidelines.pdf"
HR_QUESTION = "Who calibrates the performance ratings in the compensation review, and when?"
BANDS_QUESTION = "薪酬等级 工资范围"
LINKS = ["hr-folder", "leak-bands.docx", "leak-hr.pdf"]


@pytest.fixture
def shares(tmp_path: Path) -> dict[str, Path]:
    """A public share (group all) holding one policy and three links: to the HR share's PDF,
    to the pay bands kept outside every share, and to the HR share itself."""
    public, hr, outside = tmp_path / "share" / "public", tmp_path / "share" / "hr", tmp_path / "x"
    for folder in (public, hr, outside):
        folder.mkdir(parents=True)
    shutil.copy2(SAMPLES / "Employee-Leave-Policy.pdf", public)
    shutil.copy2(SAMPLES / "hr-only" / HR_PDF, hr)
    shutil.copy2(SAMPLES / "hr-only" / "薪酬等级表.docx", outside)
    (public / "leak-hr.pdf").symlink_to(Path("..") / "hr" / HR_PDF)
    (public / "leak-bands.docx").symlink_to(outside / "薪酬等级表.docx")
    (public / "hr-folder").symlink_to(hr, target_is_directory=True)
    return {"public": public, "hr": hr, "outside": outside}


def config_with_sources(tmp_path: Path, shares: dict[str, Path]) -> Path:
    config = tmp_path / "config.toml"
    config.write_text((REPO / "config.toml").read_text(encoding="utf-8") + (
        f'\n[[sources]]\nname = "public"\npath = "{shares["public"]}"\ngroups = ["all"]\n'
        f'every = "1h"\n\n[[sources]]\nname = "hr"\npath = "{shares["hr"]}"\n'
        'groups = ["hr"]\nevery = "1h"\n'), encoding="utf-8")
    return config


def kb(args: list[str], settings: Settings, config: Path | None = None) -> Any:
    where = ["--store", str(settings.store_path())] + (["--config", str(config)] if config
                                                       else [])
    result = CliRunner().invoke(main, [*args, *where], env={"KB_EMBED_CACHE":
                                                            settings.embed.cache})
    assert result.exit_code == 0, result.output
    return result


def hr_texts(store: Store) -> set[str]:
    """The text of every passage of the HR PDF and the pay bands, as an HR member finds them."""
    retriever = Retriever(store.settings, store)
    return {p.text for question in (HR_QUESTION, BANDS_QUESTION)
            for p in retriever.retrieve(question, ["hr"], k=50).passages}


def assert_nothing_linked_is_searchable(store: Store, hr_share_texts: set[str]) -> None:
    """A user of group all finds no passage of the files the links point to."""
    retriever = Retriever(store.settings, store)
    for question in (HR_QUESTION, BANDS_QUESTION):
        found = retriever.retrieve(question, ["all"], k=50).passages
        assert not {p.text for p in found} & hr_share_texts, question
        assert {p.file for p in found} <= {"Employee-Leave-Policy.pdf"}, question


def test_sync_skips_links_reports_them_and_nothing_they_point_to_is_searchable(
        make_settings: Any, tmp_path: Path, shares: dict[str, Path]) -> None:
    config = config_with_sources(tmp_path, shares)
    settings = dataclasses.replace(make_settings(), sources=load_settings(
        config, environ={}).sources)

    first = kb(["sync", "--once"], settings, config).output
    public = shares["public"]
    for name in LINKS:
        assert (f"  skipped   {public / name}: {name}: a symbolic link, not followed"
                in first), first
    assert ("public: ok, 4 files seen, 1 changed, 0 failed, 3 skipped: symbolic links skipped, "
            f"not followed: {', '.join(LINKS)}") in first, first
    assert "hr: ok, 1 files seen, 1 changed, 0 failed" in first
    again = kb(["sync", "--once"], settings, config).output  # said again, nothing changes
    assert "public: ok, 4 files seen, 0 changed, 0 failed, 3 skipped: symbolic links" in again

    listed = kb(["docs"], settings).output
    for name in LINKS:
        assert f"skipped         0  all          {name}  {name}: a symbolic link" in listed, listed
    assert "5 documents" in listed

    with store_for(settings) as store:
        records = store.ledger.source_documents(str(public))
        assert {rel: (r.status, r.chunk_count) for rel, r in records.items() if rel in LINKS} \
            == dict.fromkeys(LINKS, ("skipped", 0))
        # the HR member finds them in the HR share (whose texts the links point to) ...
        hr_share_texts = hr_texts(store)
        # ... the bands only where links point (outside every share): found by no one
        assert hr_share_texts
        assert_nothing_linked_is_searchable(store, hr_share_texts)

        # a synced file replaced by a link: its page is not rendered from the link, even
        # before the next pass finds it
        leave = doc_id_for(str(public), "Employee-Leave-Policy.pdf")
        assistant = open_assistant(store)
        assert assistant.document_path(leave, ["all"]) == public / "Employee-Leave-Policy.pdf"
        (public / "Employee-Leave-Policy.pdf").unlink()
        (public / "Employee-Leave-Policy.pdf").symlink_to(shares["hr"] / HR_PDF)
        with pytest.raises(AccessDenied, match="a symbolic link"):
            assistant.document_path(leave, ["all"])
        assistant.generator.close()

    third = kb(["sync", "--once"], settings, config).output
    assert "  skipped   " + str(public / "Employee-Leave-Policy.pdf") in third, third
    with store_for(settings) as store:
        assert_nothing_linked_is_searchable(store, hr_share_texts)


def test_ingest_of_a_folder_or_a_link_skips_the_links(
        make_settings: Any, shares: dict[str, Path]) -> None:
    settings = make_settings()
    public = shares["public"]
    output = kb(["ingest", str(public), "--groups", "all", "--quiet"], settings).output
    for name in LINKS:
        assert f"  skipped   {public / name}: {name}: a symbolic link, not followed" in output
    assert "ingested 1, unchanged 0, updated 0, removed 0, failed 0, skipped 3" in output, output
    one = kb(["ingest", str(public / "leak-hr.pdf"), "--groups", "all", "--quiet"], settings)
    assert "failed 0, skipped 1" in one.output, one.output
    listed = kb(["docs"], settings).output
    assert listed.count(" skipped ") == 3 and "4 documents" in listed, listed

    kb(["ingest", str(shares["hr"]), "--groups", "hr", "--quiet"], settings)
    with store_for(settings) as store:
        assert_nothing_linked_is_searchable(store, hr_texts(store))


def test_a_sources_folder_may_itself_be_a_link(make_settings: Any, tmp_path: Path) -> None:
    """The operator names a link to the share (a mount point, say): its files are read."""
    real = tmp_path / "mnt" / "policies"
    real.mkdir(parents=True)
    shutil.copy2(SAMPLES / "Employee-Leave-Policy.pdf", real)
    (tmp_path / "policies").symlink_to(real, target_is_directory=True)
    source = SourceSettings("policies", str(tmp_path / "policies"), ("all",), 60.0)
    with store_for(make_settings()) as store:
        report = sync_source(store, source, 0.2, 0.0)
        assert (report.state, report.changed, report.skipped) == ("ok", 1, []), report.reason
        assert report.ingest is not None and report.ingest.counts["ingested"] == 1


def test_a_folder_swapped_for_a_link_after_the_walk_is_not_read(
        make_settings: Any, tmp_path: Path, shares: dict[str, Path]) -> None:
    """The walk saw public/sub/x.pdf; by the time it is read, sub/ is a link to the HR share,
    which holds an x.pdf too."""
    public = shares["public"]
    shutil.copy2(shares["hr"] / HR_PDF, shares["hr"] / "x.pdf")
    (public / "sub").symlink_to(shares["hr"], target_is_directory=True)
    with ParsePool(make_settings().ingest) as pool:
        [(_, result)] = list(pool.imap([public / "sub" / "x.pdf"], [public]))
    assert isinstance(result, SymbolicLink) and str(result).startswith("sub: a symbolic link")
    with pytest.raises(SymbolicLink):
        sha256_file(public / "sub" / "x.pdf", public)


def test_a_file_swapped_between_its_hash_and_its_parse_is_recorded_as_parsed(
        make_settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook hashes the file as the run does, then replaces it (a share writer's save)
    before the parse reads it: the passages and the hash recorded are the new content's."""
    folder = tmp_path / "docs"
    folder.mkdir()
    target = folder / "policy.pdf"
    shutil.copy2(SAMPLES / "Employee-Leave-Policy.pdf", target)
    swapped = (SAMPLES / "New-Hire-Onboarding-Guide.pdf").read_bytes()
    hashed = triage.sha256_file

    def hash_then_swap(path: Path, root: Path | None = None) -> str:
        digest = hashed(path) if root is None else hashed(path, root)
        (folder / ".swap").write_bytes(swapped)
        os.replace(folder / ".swap", path)
        return digest

    monkeypatch.setattr(triage, "sha256_file", hash_then_swap)
    with store_for(make_settings()) as store:
        report = ingest_paths(store, [folder], ["all"])
        assert report.counts["ingested"] == 1, report.outcomes
        record = store.ledger.document(doc_id_for(str(folder), "policy.pdf"))
        assert record is not None and record.status == "ok"
        texts = " ".join(chunk.text for chunk, _ in store.ledger.chunks_of(record.meta.id))
    assert "onboarding" in texts.lower() and "annual leave" not in texts.lower()
    assert record.meta.sha256 == hashlib.sha256(swapped).hexdigest()


def test_a_file_name_with_a_newline_is_one_line_of_kb_docs(
        make_settings: Any, tmp_path: Path) -> None:
    settings = make_settings()
    folder = tmp_path / "share"
    folder.mkdir()
    forged = "evil\n0000000000000000  ok              9  all          forged.pdf"
    shutil.copy2(SAMPLES / "Employee-Leave-Policy.pdf", folder / (forged + ".pdf"))
    ingested = kb(["ingest", str(folder), "--quiet"], settings).output
    assert "evil\\n0000000000000000" in ingested, ingested
    assert not [line for line in ingested.splitlines() if line.startswith("0000")], ingested
    listed = kb(["docs"], settings).output
    assert listed.splitlines()[-1] == "1 documents" and len(listed.splitlines()) == 2, listed
    assert "evil\\n0000000000000000  ok" in listed
