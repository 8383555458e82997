"""Crash safety, proven (issue 11): a real `kb ingest` / `kb reindex --full` process is killed
with SIGKILL (its whole process group, parse workers included) at points observed from outside,
through the INFO lines `kb -v` logs before or after each step; nothing in the code knows it is
being tested. Then:

- the store opens and a question is answered, and the document the killed ingest was replacing
  (Code-of-Conduct.docx) is answered in its old or its new version;
- no live chunk lacks its vector and every document's chunk count is its live chunks (vectors
  written before the kill but never made live may remain: readers never see them, as retrieval
  keeps only ledger rows, and the next run collects them);
- the same command, run again, completes the job: the documents it was to ingest are live, and
  ledger and Chroma agree exactly (no orphan vectors, nothing staged, no stray collection).

A kill lands a little after its line (the time the test takes to read it), so each point is
"during or just after" that step. Two points (SHORT) run in a plain `pytest`; `-m crash` runs
the other 13, as scripts/test.sh (CI) does after the rest:

    pytest -m crash tests/ingest/test_crash.py
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import docx
import pytest

from assistant.retrieve.retriever import Retriever
from core.config import Settings, load_settings
from store.store import open_store
from tests.support.stores import ingest_paths, list_documents, store_problems, store_status

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"
NEW_RULE = "Employees may not accept cryptocurrency gifts of any value."
RUN_LIMIT_S = 180

pytestmark = pytest.mark.slow  # each point runs `kb` twice


@dataclass(frozen=True)
class KillPoint:
    name: str
    command: str  # "ingest" or "reindex"
    line: str  # a regular expression over the logged lines
    nth: int = 1  # kill at its nth occurrence


POINTS = [
    KillPoint("recovery", "ingest", r"recovering .* from an interrupted run"),
    KillPoint("parse", "ingest", r"parsing \d+ new or changed files"),
    KillPoint("embed", "ingest", r": embedding \d+ new passages"),
    KillPoint("vector write", "ingest", r"chroma upsert \d+ vectors into kb_chunks_1"),
    KillPoint("ledger commit", "ingest", r": switching to \d+ live chunks"),
    KillPoint("stale vectors", "ingest", r"chroma delete \d+ vectors"),
    KillPoint("second document", "ingest", r": switching to \d+ live chunks", nth=2),
    KillPoint("prune", "ingest", r": pruning \(its file is gone\)"),
    KillPoint("ingest end", "ingest", r"ingest run \d+: done"),
    KillPoint("reindex start", "reindex", r"full re-index into kb_chunks_2"),
    KillPoint("staging", "reindex", r": staging \d+ chunks", nth=2),
    KillPoint("new collection", "reindex", r"chroma upsert \d+ vectors into kb_chunks_2", nth=3),
    KillPoint("swap", "reindex", r"switching to collection kb_chunks_2"),
    KillPoint("old collection drop", "reindex", r"chroma dropped collection kb_chunks_1"),
    KillPoint("reindex end", "reindex", r"full re-index done"),
]
SHORT = {"ledger commit", "swap"}


def kb(settings: Settings, *args: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from ui.cli import main; main()",
        "-v",
        *args,
        "--store",
        str(settings.store_path()),
        "--quiet",
    ]


def run_and_kill(command: list[str], env: dict[str, str], line: str, nth: int) -> bool:
    """Run `command`, SIGKILL its process group at the nth logged line matching `line`; False
    when it finished without logging it."""
    pattern = re.compile(line)
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    seen = 0
    deadline = time.monotonic() + RUN_LIMIT_S
    assert process.stderr is not None
    for text in process.stderr:
        if pattern.search(text):
            seen += 1
            if seen == nth:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return True
        if time.monotonic() > deadline:
            break
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return False


def answered(settings: Settings, question: str) -> list[str]:
    """The files of the passages retrieved for `question` (lexical ranks only: no model to load
    in the checking process)."""
    lexical = replace(settings.retrieve, dense_weight=0.0)
    settings = replace(settings, retrieve=lexical)
    store = open_store(settings)
    try:
        passages = Retriever(settings, store).retrieve(question, ["all"], k=5).passages
        return [p.file for p in passages]
    finally:
        store.close()


def leftovers(settings: Settings) -> list[str]:
    """What a finished run must not leave: staged chunks, a dirty flag, stray collections."""
    found: list[str] = []
    store = open_store(settings)
    try:
        staged = store.ledger.db.execute("SELECT COUNT(*) FROM chunks_staging").fetchone()[0]
        if staged:
            found.append(f"{staged} staged chunks")
        if store.ledger.get_meta("dirty") == "1":
            found.append("dirty")
        space = store.space  # the multilingual space's own collection (issue 29)
        kept = {store.collection} | ({space.collection} if space else set())
        stray = [c for c in store.vectors.collections() if c not in kept]
        if stray:
            found.append(f"stray collections {stray}")
    finally:
        store.close()
    return found


def settings_for(store: Path, cache: Path) -> Settings:
    """config.toml's settings with `store` and the session's embedding cache."""
    settings = load_settings(REPO / "config.toml", environ={}).with_store(store)
    return replace(settings, embed=replace(settings.embed, cache=str(cache)))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, embed_cache: Path) -> tuple[Path, Path]:
    """A store of three sample documents in `docs/` (the ledger remembers that folder, so each
    kill puts `pristine/` back there) and the store's pristine copy."""
    root = tmp_path_factory.mktemp("crash")
    pristine = root / "pristine"
    pristine.mkdir()
    for name in ("Code-of-Conduct.docx", "Employee-Leave-Policy.pdf", "IT-Security-Policy.docx"):
        shutil.copy(SAMPLES / name, pristine)
    shutil.copytree(pristine, root / "docs")
    ingest_paths(settings_for(root / "store", embed_cache), [root / "docs"])
    return root, root / "store"


def change_corpus(docs: Path) -> None:
    """What the killed ingest is to do: one changed, one new, one gone (--prune)."""
    target = docs / "Code-of-Conduct.docx"
    document = docx.Document(str(target))
    document.add_paragraph(NEW_RULE)
    document.save(str(target))
    shutil.copy(SAMPLES / "New-Hire-Onboarding-Guide.pdf", docs)
    (docs / "IT-Security-Policy.docx").unlink()


@pytest.mark.parametrize(
    "point",
    [
        pytest.param(
            p, id=p.name.replace(" ", "-"), marks=() if p.name in SHORT else pytest.mark.crash
        )
        for p in POINTS
    ],
)
def test_a_killed_run_leaves_a_working_store_and_finishes_when_run_again(
    point: KillPoint, base: tuple[Path, Path], tmp_path: Path, embed_cache: Path
) -> None:
    root, template = base
    docs = root / "docs"
    shutil.rmtree(docs)
    shutil.copytree(root / "pristine", docs)
    settings = settings_for(shutil.copytree(template, tmp_path / "store"), embed_cache)
    env = {**os.environ, "KB_EMBED_CACHE": str(embed_cache)}
    if point.command == "ingest":
        change_corpus(docs)
        command = kb(settings, "ingest", str(docs), "--prune")
        if point.name == "recovery":  # a run killed earlier leaves a store to recover
            assert run_and_kill(command, env, r"chroma upsert", 1)
    else:
        command = kb(settings, "reindex", "--full")

    assert run_and_kill(command, env, point.line, point.nth), f"never logged {point.line!r}"

    # the store opens, answers, and never shows a chunk without its vector
    assert "Employee-Leave-Policy.pdf" in answered(settings, "How many days of annual leave?")
    # the document being replaced is live in its old or its new version, never in neither
    assert "Code-of-Conduct.docx" in answered(settings, "conflicts of interest gifts")
    assert [p for p in store_problems(settings) if "orphan vectors" not in p] == []

    # run again: the job completes
    finished = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert store_problems(settings) == [] and leftovers(settings) == []
    statuses = {r.meta.path: r.status for r in list_documents(settings)}
    if point.command == "ingest":
        assert statuses == {
            "Code-of-Conduct.docx": "ok",
            "Employee-Leave-Policy.pdf": "ok",
            "New-Hire-Onboarding-Guide.pdf": "ok",
        }
        assert "Code-of-Conduct.docx" in answered(settings, "cryptocurrency gifts of any value")
    else:
        assert set(statuses.values()) == {"ok"} and len(statuses) == 3
        assert store_status(settings)["collection"] != "kb_chunks_1"
