"""A set evaluated in a library: one store holding the set's documents and those of other folders
(`kb eval SET --library DIR…`), as a company's store holds many policies on the same topics from
several organisations. The set's own gold still decides. The report ("library") names the
folders and the store's size and holds the figures the set's own store gets
(`evaluate.score_in`: per language, per direction, each question's outcome), so both are read
side by side; bench/eval_*.json record both and tests/assistant/test_eval_library.py holds the
shared store of `public` and `public2` to them.

    with library_store(settings, open_services, [public / "docs", public2 / "docs"]) as parts:
        score_in(parts, public / "docs", questions)     # the public set among both sets' documents
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from assistant.evaluation.evaluate import Opener, Parts, eval_settings, score_in
from core.config import Settings
from ingest.pipeline import ingest_paths


def documents_of(folder: Path) -> Path:
    """A folder's documents: FOLDER/docs when it is a set (docs/ beside qa.jsonl), else FOLDER."""
    return folder / "docs" if (folder / "docs").is_dir() else folder


def library_folders(folder: Path, library: Sequence[Path]) -> list[Path]:
    """The set's documents and each library folder's (`documents_of`), each once, in the order
    of their paths: one library is one store, whichever of its sets is scored in it."""
    out: dict[Path, Path] = {}
    for path in [folder, *(documents_of(f) for f in library)]:
        out.setdefault(path.resolve(), path)
    return [out[key] for key in sorted(out)]


def shown(folder: Path) -> str:
    """A folder as a record names it: its last two parts, not this checkout's path.

    shown(Path("/work/shared/eval/public2/docs")) -> "public2/docs"
    """
    return "/".join(folder.resolve().parts[-2:])


@contextmanager
def library_store(
    settings: Settings, open_parts: Opener, folders: Sequence[Path]
) -> Iterator[Parts]:
    """A temporary store holding every document of `folders`, open for questions."""
    with tempfile.TemporaryDirectory(prefix="kb-eval-library-") as tmp:
        parts = open_parts(eval_settings(settings, Path(tmp)))
        try:
            ingest_paths(parts.store, list(folders))
            yield parts
        finally:
            parts.close()


def library_size(parts: Parts) -> dict[str, int]:
    """How many documents and passages a store holds."""
    ledger = parts.store.ledger
    return {"documents": len(ledger.documents()), "passages": ledger.chunk_count()}


def score_library(
    parts: Parts, folders: Sequence[Path], folder: Path, questions: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """A set's figures in a library store (`library_store` of `folders`), as "library" reports
    them: the folders, the store's size, then `score_in`'s figures and outcomes."""
    head = {"folders": [shown(f) for f in folders], **library_size(parts)}
    return {**head, **score_in(parts, folder, questions)}


def in_library(
    settings: Settings,
    open_parts: Opener,
    folder: Path,
    questions: Sequence[dict[str, Any]],
    library: Sequence[Path],
) -> dict[str, Any]:
    """A set (its documents `folder`) evaluated in a store that also holds `library`'s."""
    folders = library_folders(folder, library)
    with library_store(settings, open_parts, folders) as parts:
        return score_library(parts, folders, folder, questions)


def figures_by_group(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """A report's figures per language, and per direction for a cross-language set."""
    out: dict[str, Mapping[str, Any]] = {
        lang: m for lang, m in report.get("ours", {}).items() if lang != "all"
    }
    out.update((way, sides["cross"]) for way, sides in report.get("directions", {}).items())
    return out


def beside(report: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Each language's (and direction's) window recall and hit@1 in the set's own store beside
    the library store's, as text: (group, own, library).

    beside({"ours": {"en": {"in_window": 1.0, "hit@1": 0.9}},
            "library": {"ours": {"en": {"in_window": 0.95, "hit@1": 0.8}}}})
        -> [("en", "1.000 (0.900)", "0.950 (0.800)")]
    """

    def cell(m: Mapping[str, Any] | None) -> str:
        if not m or m.get("in_window") is None:
            return "–"
        return f"{m['in_window']:.3f} ({m['hit@1']:.3f})"

    own, shared = figures_by_group(report), figures_by_group(report.get("library", {}))
    return [(group, cell(own.get(group)), cell(shared.get(group))) for group in sorted(own)]
