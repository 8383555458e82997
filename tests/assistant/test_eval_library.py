"""`kb eval --library`: a set scored in one store that also holds other folders' documents
(assistant/evaluation/library.py). In CI, the four shared sets (public, public2, followup,
crosslang) are scored in ONE store of public's and public2's documents, built once for the
module: no figure per language (and per direction for crosslang) may fall more than one
question's worth below the "library" part of its record (bench/eval_*.json;
assistant/evaluation/record.py says which figures are strict)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assistant.evaluation.evaluate import METRICS, Parts, load_questions
from assistant.evaluation.library import (
    beside,
    documents_of,
    figures_by_group,
    library_folders,
    library_store,
    score_library,
    shown,
)
from assistant.evaluation.record import check
from core.config import load_settings
from ui.cli import main
from ui.wiring import open_services

REPO = Path(__file__).resolve().parents[2]
# set -> the folder of the documents it asks about
SETS = {"public": "public", "public2": "public2", "followup": "public2", "crosslang": "public2"}
GATED = (*METRICS, "refused")


def test_library_folders_name_each_folder_once_and_a_sets_docs(tmp_path: Path) -> None:
    (tmp_path / "b" / "docs").mkdir(parents=True)
    (tmp_path / "a").mkdir()
    own = tmp_path / "b" / "docs"
    folders = library_folders(own, [tmp_path / "b", tmp_path / "a", tmp_path / "a"])
    assert folders == [tmp_path / "a", own]
    assert documents_of(tmp_path / "a") == tmp_path / "a"
    assert shown(own) == "b/docs"


def test_figures_side_by_side_per_language_and_direction() -> None:
    def figures(window: float, first: float) -> dict[str, Any]:
        return {"in_window": window, "hit@1": first}

    report = {
        "ours": {"en": figures(1.0, 0.9), "all": figures(1.0, 0.9)},
        "directions": {"en→zh": {"cross": figures(0.8, 0.4), "control": figures(1.0, 1.0)}},
        "library": {"ours": {"en": figures(0.95, 0.8)}, "directions": {}},
    }
    assert figures_by_group(report) == {"en": figures(1.0, 0.9), "en→zh": figures(0.8, 0.4)}
    assert beside(report) == [("en", "1.000 (0.900)", "0.950 (0.800)"),
                              ("en→zh", "0.800 (0.400)", "–")]  # fmt: skip


@pytest.fixture(scope="module")
def library(
    shared: Path, embed_cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Parts, list[Path]]]:
    """One store of public's and public2's documents, for every set of the module."""
    settings = load_settings(REPO / "config.toml", environ={})
    settings = dataclasses.replace(
        settings, embed=dataclasses.replace(settings.embed, cache=str(embed_cache))
    )
    folders = [shared / "eval" / "public" / "docs", shared / "eval" / "public2" / "docs"]
    store = tmp_path_factory.mktemp("library")
    with library_store(settings.with_store(store), open_services, folders) as parts:
        yield parts, folders


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SETS))
def test_each_set_holds_its_record_in_one_library_store(
    library: tuple[Parts, list[Path]], shared: Path, name: str
) -> None:
    parts, folders = library
    questions = load_questions(shared / "eval" / name / "qa.jsonl")
    report = score_library(parts, folders, shared / "eval" / SETS[name] / "docs", questions)
    recorded = REPO / "bench" / f"eval_{name}.json"
    record = json.loads(recorded.read_text("utf-8"))["library"]
    print(json.dumps({k: report[k] for k in ("documents", "passages", "ours")}, indent=1))
    assert (report["documents"], report["folders"]) == (record["documents"], record["folders"])
    now, was = figures_by_group(report), figures_by_group(record)
    outcomes = (report["outcomes"]["ours"], record["outcomes"]["ours"])
    failed = check(now, was, GATED, outcomes, f"{recorded.name}, in the library store")
    assert not failed, failed


@pytest.mark.slow
def test_kb_eval_library_scores_the_set_in_a_store_with_more_documents(
    make_settings, tmp_path: Path
) -> None:
    """`kb eval SET --library DIR` reports the set's figures in a store that also holds DIR's
    documents, beside its own store's."""
    more = tmp_path / "more"
    more.mkdir()
    (more / "Other-Policy.docx").write_bytes(next((REPO / "data" / "samples" / "docs").glob(
        "*.docx")).read_bytes())  # fmt: skip
    env = {"KB_EMBED_CACHE": str(make_settings().embed.cache), "KB_EMBED_MULTILINGUAL_MODEL": ""}
    args = ["eval", str(REPO / "data" / "samples"), "--no-baseline", "--library", str(more)]
    config = ["--config", str(REPO / "config.toml")]
    result = CliRunner().invoke(main, [*args, *config, "--json"], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    own = sum(1 for f in (REPO / "data" / "samples" / "docs").rglob("*")
              if f.suffix in (".pdf", ".docx"))  # fmt: skip
    assert report["library"]["folders"] == sorted(
        ["samples/docs", f"{tmp_path.name}/more"],
        key=lambda f: str(REPO / "data" if f.startswith("samples") else tmp_path))
    assert report["library"]["documents"] == own + 1
    assert report["library"]["ours"]["en"]["answerable"] == report["ours"]["en"]["answerable"]
    text = CliRunner().invoke(main, [*args, *config], env=env).output
    assert "window recall (hit@1): its own store | the library store" in text
