"""scripts/test.sh, what CI runs (.ci/run): every check runs whichever failed before it (the
crash points too when the main pytest pass is red), and the exit status says whether any failed.
The script runs for real over stand-ins for setup, ruff, mypy and pytest that log their calls."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STAND_IN = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "{log}"
case " $* " in *" -m crash "*) exit {crash};; *" -m pytest "*) exit {main};; esac
exit {other}
"""


def run_script(tmp_path: Path, main: int, crash: int, other: int = 0) -> tuple[int, str, str]:
    """scripts/test.sh in a copy of the repository's scripts and core/offline.py whose .venv
    holds stand-ins; its exit status, stderr and the stand-ins' log."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    (root / "core").mkdir()
    shutil.copy(REPO / "scripts" / "test.sh", root / "scripts" / "test.sh")
    shutil.copy(REPO / "core" / "offline.py", root / "core" / "offline.py")
    (root / "core" / "__init__.py").write_text("")
    log = tmp_path / "calls.log"
    tools = {"scripts/setup.sh": 0, ".venv/bin/python": None, ".venv/bin/ruff": other,
             ".venv/bin/mypy": other}  # fmt: skip
    for name, status in tools.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STAND_IN.format(log=log, main=main, crash=crash,
                                        other=0 if status is None else status))  # fmt: skip
        path.chmod(0o755)
    done = subprocess.run(["bash", str(root / "scripts" / "test.sh")], cwd=root,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return done.returncode, done.stderr, log.read_text()


def test_the_crash_points_run_when_the_main_pass_fails(tmp_path: Path) -> None:
    status, stderr, calls = run_script(tmp_path, main=1, crash=0)
    assert "-m crash tests/ingest/test_crash.py tests/ingest/test_queue.py" in calls
    assert status == 1
    assert "test: failed: pytest" in stderr


@pytest.mark.parametrize(
    ("main", "crash", "other", "named"),
    [(0, 0, 0, None), (0, 1, 0, "crash"), (1, 1, 0, "pytest crash"), (0, 0, 1, "ruff mypy")],
)
def test_the_status_is_red_when_any_check_failed_and_names_them(
    tmp_path: Path, main: int, crash: int, other: int, named: str | None
) -> None:
    status, stderr, calls = run_script(tmp_path, main, crash, other)
    assert calls.count("python -m pytest") == 2  # the main pass and the crash points, always
    assert status == (0 if named is None else 1)
    assert (named is None) == ("test: failed" not in stderr)
    if named:
        assert f"test: failed: {named}" in stderr
