"""Paths that code, tests and documents name (`ingest/parse/pdf.py`, `docs/tuning.md`) exist:
after a move, a docstring or a document that still points at the old place fails here."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAMED = re.compile(
    r"(?<![\w./-])((?:core|store|ingest|assistant|ui|tests|bench|scripts|devtools|docs)/[\w./-]*\w)"
)
# Written at run time, placeholders, or examples of the checks themselves.
NOT_FILES = {"bench/results/latest.json", "tests/data/generated", "bench/eval_public"}
# History keeps the names it had; the checks of the code's map make up paths for their examples.
SKIPPED = ("docs/benchmarks-history.md", "bench/results/", "tests/test_named_paths.py",
           "tests/test_readme_map.py", "tests/test_layers.py", "tests/test_security_md.py")


def broken_names(text: str, root: Path) -> list[str]:
    """The repository paths `text` names that do not exist under `root` (globs, placeholders
    in capitals and `NOT_FILES` left out).

    broken_names("see ingest/parse/pdf.py and ui/app.py", REPO) -> ["ui/app.py"]
    """
    found = []
    for match in NAMED.finditer(text):
        name = match.group(1).rstrip(".")
        glob = text[match.end():match.end() + 1] in ("*", "{")
        if glob or re.search(r"[A-Z]{3,}", name) or name in NOT_FILES:
            continue
        if not (root / name).exists():
            found.append(name)
    return found


def test_every_named_path_exists() -> None:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.split()
    broken = {
        name: path
        for path in listed
        if path.endswith((".py", ".md", ".toml", ".sh")) and not path.startswith(SKIPPED)
        for name in broken_names((REPO / path).read_text(encoding="utf-8"), REPO)
    }
    assert broken == {}


def test_the_check_finds_a_moved_module() -> None:
    assert broken_names("see ingest/parse/pdf.py and ui/app.py", REPO) == ["ui/app.py"]
    assert broken_names("scripts/screenshots*.py, bench/results/NAME.json", REPO) == []
