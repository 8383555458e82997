"""bench/ keeps its rooms: every benchmark `python -m bench` registers, and every
`python -m bench.…` a document or a docstring names, is a module that is there; each room's
__init__.py names every module it holds; and no room imports another (bench/common.py is
shared)."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from bench.__main__ import BENCHES

REPO = Path(__file__).resolve().parents[2]
ROOMS = sorted(p.parent.name for p in (REPO / "bench").glob("*/__init__.py"))
# `python -m bench.X`, as a document or a docstring names a benchmark to run (not a
# placeholder such as bench.ROOM.NAME)
NAMED = re.compile(r"python3? -m (bench(?:\.[a-z_]+)+)(?![\w.])")
# History keeps the names it had, recorded reports say how they ran then, and tests pass old
# names on purpose (tests/bench/test_report.py: a recorded command named as it is now)
NOT_COMMANDS = ("docs/benchmarks-history.md", "bench/results/", "tests/")


def test_the_rooms_are_the_ones_the_map_names() -> None:
    assert ROOMS == ["ingest", "load", "quality", "query", "report", "serving"]


@pytest.mark.parametrize("name", sorted(BENCHES))
def test_every_registered_benchmark_is_a_module(name: str) -> None:
    assert importlib.util.find_spec(f"bench.{BENCHES[name].module}") is not None


def named_modules(root: Path) -> dict[str, str]:
    """Each `python -m bench.…` module the tracked files name, with a file that names it."""
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                            check=True).stdout.split()
    found: dict[str, str] = {}
    for path in listed:
        if path.endswith((".py", ".md", ".sh", ".json")) and not path.startswith(NOT_COMMANDS):
            for name in NAMED.findall((root / path).read_text("utf-8")):
                found.setdefault(name, path)
    return found


def is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # its package is not there either
        return False


def test_every_module_a_command_names_is_there() -> None:
    found = named_modules(REPO)
    assert "bench.query.retrieve_latency" in found  # the check sees the documents' commands
    missing = {name: path for name, path in found.items() if not is_module(name)}
    assert missing == {}


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_names_what_it_holds(room: str) -> None:
    folder = REPO / "bench" / room
    text = (folder / "__init__.py").read_text("utf-8")
    held = [p.name + ("/" if p.is_dir() else "") for p in sorted(folder.iterdir())
            if p.name not in ("__init__.py", "__pycache__")]
    assert held and [name for name in held if name not in text] == []


def imported_rooms(path: Path) -> set[str]:
    """The rooms of bench/ a module imports (bench.common and the package itself left out)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found |= {n.split(".")[1] for n in names if n.startswith("bench.") and n != "bench.common"
                  and n.split(".")[1] in ROOMS}
    return found


@pytest.mark.parametrize("room", ROOMS)
def test_no_room_imports_another(room: str) -> None:
    crossing = {str(p.relative_to(REPO)): imported_rooms(p) - {room}
                for p in sorted((REPO / "bench" / room).rglob("*.py"))}
    assert {path: rooms for path, rooms in crossing.items() if rooms} == {}


def test_the_import_check_sees_a_room_crossing(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import bench.common\nfrom bench.query.overhead import x\n"
                      "def f():\n    import bench.ingest.corpus_gen\n")
    assert imported_rooms(module) == {"query", "ingest"}
