"""The floors: core ← store ← ingest ← assistant ← ui. No module imports a floor above its
own (imports inside functions and under TYPE_CHECKING count), and only the ledger (and the embedding
cache) speaks SQL. Inside a floor, the rooms (its packages) never import each other in a circle,
no room holds more than a dozen modules and no module passes 400 lines; few functions pass a
screen, and the code names no issue numbers (history lives in git and docs/)."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
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


# --- the rooms of a floor -----------------------------------------------------------------------
# A room is a package inside a floor (`ui/identity/`, `store/ledger/`); the modules beside a
# floor's rooms (`ui/wiring.py`) are its hall, which every room of it may import.
MAX_MODULES = 12  # modules in a room (its __init__.py aside) or in a floor's hall
MAX_LINES = 400
# Functions longer than a screen (50 lines), at most: the few left, each a sequence of steps
# that reads best in one place. The next one splits first.
MAX_LONG_FUNCTIONS = 9
ISSUE = re.compile(r"\b[Ii]ssues? [0-9]+")


def module_paths(root: Path) -> dict[str, Path]:
    """Every module of the floors by its dotted name, a package by its folder's name.

    module_paths(REPO)["ui.identity"] -> REPO / "ui/identity/__init__.py"
    """
    found: dict[str, Path] = {}
    for floor in FLOORS:
        for path in sorted((root / floor).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported_modules(source: str, known: Collection[str]) -> set[str]:
    """The modules of `known` a module imports, wherever the import stands; `from a import b`
    imports a.b when that is a module, else a.

    imported_modules("from ui.web import server", {"ui.web", "ui.web.server"}) -> {"ui.web.server"}
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = {f"{node.module}.{alias.name}" for alias in node.names} & set(known)
            found.update(names or {node.module})
    return found & set(known)


def room_edges(root: Path) -> dict[str, set[str]]:
    """For every folder of the floors, which of its rooms import which other: a module under one
    room (in it or in a room inside it) that imports a module under another.

    room_edges(REPO)["ui/web"] -> {"ui/admin", "ui/api", "ui/identity", "ui/page"}
    """
    paths = module_paths(root)
    edges: dict[str, set[str]] = {}
    for path in paths.values():
        here = path.relative_to(root).parts
        for target in imported_modules(path.read_text(encoding="utf-8"), paths):
            there = paths[target].relative_to(root).parts
            i = 0  # the first folder the two paths do not share
            while i < min(len(here), len(there)) - 1 and here[i] == there[i]:
                i += 1
            if 0 < i < len(here) - 1 and i < len(there) - 1:  # both under rooms of one folder
                edges.setdefault("/".join(here[: i + 1]), set()).add("/".join(there[: i + 1]))
    return edges


def circles(edges: dict[str, set[str]]) -> list[str]:
    """The pairs of rooms that reach each other through their imports.

    circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) -> ["a <-> b", "a <-> c", "b <-> c"]
    """

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for room in edges.get(todo.pop(), ()):
                if room not in seen:
                    seen.add(room)
                    todo.append(room)
        return seen

    reached = {room: reach(room) for room in edges}
    return sorted(f"{a} <-> {b}" for a in reached for b in reached[a]
                  if a < b and a in reached.get(b, set()))


def crowded(root: Path) -> list[str]:
    """The floors' halls and rooms holding more than MAX_MODULES modules."""
    folders = [root / floor for floor in FLOORS]
    folders += [p.parent for floor in FLOORS for p in (root / floor).rglob("*/__init__.py")]
    counts = {f: len([p for p in f.glob("*.py") if p.name != "__init__.py"]) for f in folders}
    return sorted(f"{f.relative_to(root)}: {n}" for f, n in counts.items() if n > MAX_MODULES)


def long_modules(root: Path) -> list[str]:
    return sorted(f"{p.relative_to(root)}: {n}" for p in module_paths(root).values()
                  if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES)


def long_functions(root: Path) -> list[str]:
    """The functions (methods included) longer than a screen, 50 lines."""
    found = []
    for path in module_paths(root).values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 50:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} {length}")
    return sorted(found)


def test_no_rooms_of_a_floor_import_each_other_in_a_circle() -> None:
    assert circles(room_edges(REPO)) == []


def test_no_room_holds_more_than_a_dozen_modules() -> None:
    assert crowded(REPO) == []


def test_no_module_passes_400_lines() -> None:
    assert long_modules(REPO) == []


def test_few_functions_pass_a_screen() -> None:
    found = long_functions(REPO)
    assert len(found) <= MAX_LONG_FUNCTIONS, "\n".join(found)


def test_product_code_names_no_issue_numbers() -> None:
    assert [f"{p.relative_to(REPO)}: {m.group()}" for p in module_paths(REPO).values()
            for m in ISSUE.finditer(p.read_text(encoding="utf-8"))] == []


def test_the_room_checks_see_circles_crowds_and_long_modules(tmp_path: Path) -> None:
    for floor in FLOORS:
        (tmp_path / floor).mkdir()
    for room in ("ui/a", "ui/b", "ui/c", "ui/c/d"):
        (tmp_path / room).mkdir()
        (tmp_path / room / "__init__.py").write_text("")
    (tmp_path / "ui" / "a" / "x.py").write_text("def f():\n    from ui.b import y\n")
    (tmp_path / "ui" / "b" / "y.py").write_text("from ui.c.d import z\nimport ui.hall\n")
    (tmp_path / "ui" / "c" / "d" / "z.py").write_text("from ui.a import x\n")
    (tmp_path / "ui" / "c" / "w.py").write_text("from ui.c.d import z\n" + "x = 1\n" * 400)
    (tmp_path / "ui" / "hall.py").write_text("from ui.a import x\n")
    for n in range(MAX_MODULES + 1):
        (tmp_path / "ui" / "b" / f"m{n}.py").write_text("")
    edges = room_edges(tmp_path)
    assert edges == {"ui/a": {"ui/b"}, "ui/b": {"ui/c"}, "ui/c": {"ui/a"}}
    assert circles(edges) == ["ui/a <-> ui/b", "ui/a <-> ui/c", "ui/b <-> ui/c"]
    assert crowded(tmp_path) == [f"ui/b: {MAX_MODULES + 2}"]
    assert long_modules(tmp_path) == ["ui/c/w.py: 401"]
