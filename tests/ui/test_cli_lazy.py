"""`kb` loads a command's module only when that command runs, and `kb ask` needs neither torch
nor the ingest parsers nor the app's metrics nor Chroma nor OpenVINO (a cold start)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import docx
import pytest

from tests.support.stores import ingest_paths
from ui.cli import COMMAND_HOMES, COMMAND_MODULES, main

REPO = Path(__file__).resolve().parents[2]


def test_every_command_is_found_where_the_table_says() -> None:
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name
        if name not in ("serve", "users"):
            assert name in COMMAND_HOMES, f"{name}: add it to ui.cli.COMMAND_HOMES"
            module = sys.modules[COMMAND_HOMES[name]]
            assert command.callback is not None
            assert command.callback.__module__ == module.__name__
    assert set(COMMAND_HOMES.values()) == set(COMMAND_MODULES)


PROBE = """
import sys
from ui.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    assert not exit.code, exit.code
loaded = [m for m in ("torch", "transformers", "sentence_transformers", "ingest.parse",
                      "ingest.pipeline", "gradio", "prometheus_client", "chromadb", "openvino")
          if m in sys.modules]
print("LOADED:" + ",".join(loaded))
"""


def probe_kb(env: dict[str, str], *args: str) -> tuple[list[str], str]:
    """Run `kb ARGS` in a new process: its output lines, and which of PROBE's modules it
    loaded ("chromadb,torch"; "" for none)."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    *lines, loaded = done.stdout.strip().splitlines()
    return lines, loaded.removeprefix("LOADED:")


@pytest.mark.slow  # `kb` in new processes
def test_kb_ask_loads_neither_torch_nor_parsers_nor_chroma(make_settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Nor Chroma nor OpenVINO, for an English question and a Chinese one, with the crosslang
    space on as config.toml ships it: the passages' vectors of both spaces are read from the
    embedding cache, the questions embedded in numpy. Where the cache lacks them (another
    cache file), Chroma is opened for them, with the same passages found."""
    settings = make_settings()
    ingest_paths(settings, [REPO / "data" / "samples" / "docs"])
    env = {
        **os.environ,
        "KB_LLM_URL": "http://127.0.0.1:9/v1",  # nothing listens: retrieval-only
        "KB_EMBED_CACHE": settings.embed.cache,
        "PYTHONPATH": str(REPO),
    }
    assert tuple(settings.embed.languages) == ("en",) and settings.embed.multilingual_model
    other_cache = {**env, "KB_EMBED_CACHE": str(tmp_path / "another-cache.sqlite")}
    found: dict[str, list[str]] = {}
    for question, loaded, env_now in (
        ("How many days of annual leave can I carry over?", "", env),
        ("年假最多可以结转几天？", "", env),
        ("How many days of annual leave can I carry over?", "chromadb", other_cache),
    ):
        lines, loaded_now = probe_kb(env_now, "ask", question, "--store",
                                     str(settings.store_path()), "--json")
        answer = json.loads(lines[-1])
        assert answer["mode"] in ("retrieval_only", "abstained"), answer["mode"]
        assert answer["passages"], question
        assert loaded_now == loaded, (question, loaded_now)
        files = [p["file"] for p in answer["passages"]]
        assert found.setdefault(question, files) == files  # the same from the cache as Chroma
        if question.startswith("How"):
            assert answer["mode"] == "retrieval_only"
            assert files[0] == "Employee-Leave-Policy.pdf"


@pytest.mark.slow  # `kb` in new processes
def test_kb_reindex_opens_chroma_only_for_a_changed_file(make_settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """With nothing changed, `kb reindex` reads the ledger and the files alone; a changed file
    is re-indexed as before, Chroma opened for it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("Code-of-Conduct.docx", "IT-Security-Policy.docx"):
        shutil.copy(REPO / "data" / "samples" / "docs" / name, docs)
    settings = make_settings()
    ingest_paths(settings, [docs])
    env = {**os.environ, "KB_EMBED_CACHE": settings.embed.cache, "PYTHONPATH": str(REPO)}

    def reindex() -> tuple[str, list[str]]:
        report, loaded = probe_kb(env, "reindex", "--store", str(settings.store_path()), "--quiet")
        return "\n".join(report), loaded.split(",")

    report, loaded = reindex()
    assert "unchanged 2, updated 0" in report and "chromadb" not in loaded, (report, loaded)
    document = docx.Document(str(docs / "IT-Security-Policy.docx"))
    document.add_paragraph("Visitors sign the reindex test book at the front desk.")
    document.save(str(docs / "IT-Security-Policy.docx"))
    report, loaded = reindex()
    assert "unchanged 1, updated 1" in report and "chromadb" in loaded, (report, loaded)
    assert not report.endswith(", 0.0 s)"), report  # the run's own time, Chroma's opening in it
