"""SECURITY.md names the tests that prove its guarantees: each test it names is there (its file,
and its function), so a test renamed or removed cannot leave a guarantee pointing at nothing; and
each guarantee is a line of its table, its detail under the table.

SECURITY.md names a test by its path (`tests/ui/test_trust.py::test_x`), by its file's name when
one file under tests/ has it (`test_trust.py::test_x`), or as `::test_x`, a test of the file named
before it in the same table row or paragraph; a file alone stands for every test in it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# a code span naming a test file, a test in it, or `::test_x` of the file named before it
NAMED = re.compile(r"`((?:tests/[\w/]+/)?test_\w+\.py)?(?:::(test_\w+))?`")
GUARANTEE_CHARS = 200  # a guarantee's cell: one line of the table


def blocks(text: str) -> Iterator[str]:
    """Each table row, heading, list item and paragraph of a Markdown text.

    list(blocks("| a |\\n| b |\\n\\n- c\\n  d")) -> ["| a |", "| b |", "- c\\n  d"]
    """
    block: list[str] = []
    for line in text.splitlines():
        if block and (not line.strip() or line.startswith(("|", "#", "- "))):
            yield "\n".join(block)
            block = []
        if line.strip():
            block.append(line)
    if block:
        yield "\n".join(block)


def named_tests(text: str) -> list[tuple[str, str]]:
    """(file as written, test or "") for each test `text` names; "" for the file of a `::test_x`
    with no file named before it in its block.

    named_tests("| x | `test_a.py::test_b`, `::test_c` |") -> [("test_a.py", "test_b"),
                                                                ("test_a.py", "test_c")]
    """
    found = []
    for block in blocks(text):
        file = ""
        for match in NAMED.finditer(block):
            written, test = match.groups()
            if written or test:
                file = written or file
                found.append((file, test or ""))
    return found


@cache
def file_named(written: str) -> Path | None:
    """The test file a name stands for: a path from the repository root, or the one file of
    that name under tests/."""
    if "/" in written:
        return REPO / written if (REPO / written).is_file() else None
    found = sorted((REPO / "tests").rglob(written))
    return found[0] if len(found) == 1 else None


@cache
def functions(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text("utf-8"))
    return frozenset(node.name for node in ast.walk(tree)
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))


def missing(text: str) -> list[str]:
    """The tests `text` names that are not there, as it names them."""
    gone = []
    for written, test in named_tests(text):
        path = file_named(written) if written else None
        if path is None or (test and test not in functions(path)):
            gone.append(f"{written}::{test}" if test else written)
    return gone


def test_every_test_security_md_names_is_there() -> None:
    text = (REPO / "SECURITY.md").read_text("utf-8")
    assert len(named_tests(text)) > 150  # the check sees the tables' tests
    assert missing(text) == []


def test_a_renamed_test_or_a_test_without_its_file_is_found() -> None:
    assert missing("| a | `tests/ui/test_trust.py::test_config_and_errors_do_not_leak` |") == []
    assert missing("| a | `test_trust.py::test_no_such_test`, `tests/ui/test_render.py` |") == [
        "test_trust.py::test_no_such_test"]
    assert missing("| a | `::test_config_and_errors_do_not_leak` |") == [
        "::test_config_and_errors_do_not_leak"]
    assert missing("- `tests/ui/test_no_such_file.py`, `test_guard.py::test_x`") == [
        "tests/ui/test_no_such_file.py", "test_guard.py::test_x"]


def test_each_guarantee_is_one_line_of_its_table() -> None:
    long = []
    in_table = False
    for line in (REPO / "SECURITY.md").read_text("utf-8").splitlines():
        in_table = line == "| guarantee | test |" or (in_table and line.startswith("|"))
        guarantee = line.split(" | ")[0].removeprefix("| ")
        if in_table and len(guarantee) > GUARANTEE_CHARS:
            long.append(guarantee)
    assert long == []
