"""README.md's map of the code: it names every module of the five floors, and every path it
names exists, so a newcomer can trust it to find "where are passages packed into the window?"."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLOORS = ["core", "store", "ingest", "assistant", "ui"]
MAP_START, MAP_END = "<!-- map -->", "<!-- /map -->"


def readme_map(readme: str) -> str:
    """The part of the README between the map's markers."""
    start, end = readme.index(MAP_START), readme.index(MAP_END)
    return readme[start:end]


def named_paths(text: str) -> set[str]:
    """Paths named in backticks, a row's shared folder spelled out: `ingest/parse/` `pdf.py`
    names ingest/parse/pdf.py.

    named_paths("| `ui/web/` `app.py`, `api.py` |") -> {"ui/web/", "ui/web/app.py", "ui/web/api.py"}
    """
    found: set[str] = set()
    for row in text.splitlines():
        folder = ""
        for name in re.findall(r"`([\w./-]+)`", row):
            if name.startswith("/"):  # a route, not a path
                continue
            if "/" in name:
                found.add(name)
                folder = name if name.endswith("/") else folder
            elif folder and name.endswith(".py"):
                found.add(folder + name)
    return found


def modules(root: Path) -> set[str]:
    """Every module of the floors, a package by its folder when its __init__ holds code."""
    found = set()
    for floor in FLOORS:
        for path in (root / floor).rglob("*.py"):
            rel = path.relative_to(root).as_posix()
            if path.name == "__init__.py":
                if path.read_text(encoding="utf-8").strip():
                    found.add(rel.removesuffix("__init__.py"))
            else:
                found.add(rel)
    return found


def test_the_map_names_every_module() -> None:
    named = named_paths(readme_map((REPO / "README.md").read_text(encoding="utf-8")))
    assert sorted(modules(REPO) - named) == []


def test_every_path_the_map_names_exists() -> None:
    named = named_paths(readme_map((REPO / "README.md").read_text(encoding="utf-8")))
    assert sorted(p for p in named if "/" in p and not (REPO / p).exists()) == []


def test_the_check_reads_shared_folders_and_finds_gaps(tmp_path: Path) -> None:
    for floor in FLOORS:
        (tmp_path / floor).mkdir()
    (tmp_path / "ui" / "web").mkdir()
    (tmp_path / "ui" / "web" / "__init__.py").write_text("")
    (tmp_path / "ui" / "web" / "app.py").write_text("x = 1\n")
    (tmp_path / "ui" / "web" / "api.py").write_text("x = 1\n")
    (tmp_path / "core" / "text.py").write_text("x = 1\n")
    named = named_paths("| `ui/web/` `app.py` | the page |\n| `core/types.py` | types |")
    assert named == {"ui/web/", "ui/web/app.py", "core/types.py"}
    assert sorted(modules(tmp_path) - named) == ["core/text.py", "ui/web/api.py"]
