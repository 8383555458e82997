"""The maps of the code: README.md's has one row per room (every package of the five floors), and
each room's `__init__.py` docstring is that room's own map, naming every module and room in it,
what it may import and where the next thing goes; every path the README's map names exists. So
a newcomer can trust them to find "where are passages packed into the window?"."""

from __future__ import annotations

import ast
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


def rooms(root: Path) -> list[str]:
    """Every package of the floors, the floors themselves included, as "ingest/parse/"."""
    return sorted(
        path.parent.relative_to(root).as_posix() + "/"
        for floor in FLOORS
        for path in (root / floor).rglob("__init__.py")
    )


def map_rows(text: str) -> list[str]:
    """The room each row of a map table names first.

    map_rows("| `ui/web/` | the server |\\n| `ui/page/` | the page |") -> ["ui/web/", "ui/page/"]
    """
    return [found.group(1) for row in text.splitlines()
            if (found := re.match(r"\|\s*`([\w./-]+/)`", row))]


def room_gaps(root: Path, room: str) -> list[str]:
    """What the docstring of `room`'s `__init__.py` leaves out of its map: a module or room in it
    it does not name, what the room may import (a sentence saying "import"), or where the next
    thing goes (a sentence saying "next" or "new").

    room_gaps(REPO, "ui/identity/") -> []
    """
    folder = root / room
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
    if not doc:
        return [f"{room}__init__.py: no docstring"]
    members = [p.name for p in folder.glob("*.py") if p.name != "__init__.py"]
    members += [p.name + "/" for p in folder.iterdir() if (p / "__init__.py").is_file()]
    gaps = [f"{room}{name}" for name in sorted(members)
            if not re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w])", doc)]
    if not re.search(r"\bimport", doc):
        gaps.append(f"{room}: what it may import")
    if not re.search(r"\b(next|new)\b", doc, re.IGNORECASE):
        gaps.append(f"{room}: where the next thing goes")
    return gaps


def test_the_readme_has_one_row_per_room() -> None:
    rows = map_rows(readme_map((REPO / "README.md").read_text(encoding="utf-8")))
    assert sorted(rows) == rooms(REPO)
    assert len(rows) == len(set(rows))


def test_every_room_maps_itself_in_its_init_docstring() -> None:
    assert [gap for room in rooms(REPO) for gap in room_gaps(REPO, room)] == []


def test_every_path_the_map_names_exists() -> None:
    named = named_paths(readme_map((REPO / "README.md").read_text(encoding="utf-8")))
    assert sorted(p for p in named if "/" in p and not (REPO / p).exists()) == []


def test_the_checks_find_an_unmapped_room_and_module(tmp_path: Path) -> None:
    for floor in FLOORS:
        (tmp_path / floor).mkdir()
        (tmp_path / floor / "__init__.py").write_text(
            '"""The floor: nothing yet. It imports nothing; the next module goes here."""\n')
    (tmp_path / "ui" / "web").mkdir()
    (tmp_path / "ui" / "web" / "__init__.py").write_text(
        '"""The server: `server.py`. It imports the hall."""\n')
    (tmp_path / "ui" / "web" / "server.py").write_text("x = 1\n")
    (tmp_path / "ui" / "web" / "bodies.py").write_text("x = 1\n")
    assert room_gaps(tmp_path, "ui/web/") == ["ui/web/bodies.py",
                                              "ui/web/: where the next thing goes"]
    assert room_gaps(tmp_path, "ui/") == ["ui/web/"]
    assert room_gaps(tmp_path, "core/") == []
    table = "| room | what |\n| --- | --- |\n| `core/` | x |\n| `ui/web/` `server.py` | y |"
    rows = map_rows(table)
    assert rows == ["core/", "ui/web/"]
    assert sorted(set(rooms(tmp_path)) - set(rows)) == [
        "assistant/", "ingest/", "store/", "ui/"]
