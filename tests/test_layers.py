"""The floors: core ← store ← ingest ← assistant ← ui. No module imports a floor above its
own (imports inside functions and under TYPE_CHECKING count), and only the ledger (and the embedding
cache) speaks SQL."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FLOORS = ["core", "store", "ingest", "assistant", "ui"]
# the ledger package and the embedding cache
SQL_MODULES = ("store/ledger/", "store/embed/embedder.py")


def imported_packages(source: str) -> set[str]:
    """The top-level packages a module imports, wherever the import stands.

    imported_packages("def f():\\n    from ui.web.app import x") -> {"ui"}
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def upward_imports(root: Path) -> list[str]:
    found = []
    for level, floor in enumerate(FLOORS):
        above = set(FLOORS[level + 1 :])
        for path in sorted((root / floor).rglob("*.py")):
            for package in imported_packages(path.read_text(encoding="utf-8")) & above:
                found.append(f"{path.relative_to(root)} imports {package}")
    return found


def test_no_floor_imports_one_above_it() -> None:
    assert upward_imports(REPO) == []


def test_the_check_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    for floor in FLOORS:
        (tmp_path / floor).mkdir()
    (tmp_path / "ingest" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from assistant.x import y\n"
    )
    (tmp_path / "core" / "b.py").write_text("def f():\n    import ui.web.app\n")
    (tmp_path / "ui" / "c.py").write_text("from core.types import Chunk\nimport assistant\n")
    assert upward_imports(tmp_path) == [
        "core/b.py imports ui",
        "ingest/a.py imports assistant",
    ]


@pytest.mark.parametrize("folder", [*FLOORS, "bench"])
def test_only_the_ledger_speaks_sql(folder: str) -> None:
    speaking = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / folder).rglob("*.py"))
        if ".execute(" in path.read_text(encoding="utf-8")
        and not str(path.relative_to(REPO)).startswith(SQL_MODULES)
    ]
    assert speaking == []
