"""scripts/demo.sh, the newcomer's first command: demo mode by default; with --admin, the app
with its sign-in and a demo admin whose fresh password is printed, the way to the Admin tab.
The script runs for real over a stand-in `kb` that logs its calls (and its stdin)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KB = """#!/usr/bin/env bash
case " $* " in *" --password-stdin "*) given=$(cat);; *) given="";; esac
echo "kb $* <$given>" >> "LOG"
exit 0
"""


def run_demo(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    (root / "core").mkdir()
    shutil.copy(REPO / "scripts" / "demo.sh", root / "scripts" / "demo.sh")
    shutil.copy(REPO / "core" / "offline.py", root / "core" / "offline.py")
    (root / "core" / "__init__.py").write_text("")
    log = tmp_path / "calls.log"
    for name, text in {"scripts/setup.sh": "#!/usr/bin/env bash\nexit 0\n",
                       ".venv/bin/kb": KB.replace("LOG", str(log))}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    done = subprocess.run(["bash", str(root / "scripts" / "demo.sh"), *args], cwd=root,
                          capture_output=True, text=True, timeout=60)
    return done, log.read_text() if log.exists() else ""


def test_demo_serves_demo_mode(tmp_path: Path) -> None:
    done, calls = run_demo(tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls.splitlines()[-1] == "kb serve --demo --start-model <>"


def test_demo_admin_makes_an_admin_prints_the_password_and_serves_with_sign_in(
        tmp_path: Path) -> None:
    done, calls = run_demo(tmp_path, "--admin")
    assert done.returncode == 0, done.stderr
    add = next(line for line in calls.splitlines() if line.startswith("kb users add"))
    assert add.startswith("kb users add admin --groups all,hr --admin --password-stdin <")
    password = add.rsplit("<", 1)[1].rstrip(">")
    assert len(password) >= 12
    assert f"sign in as 'admin' with password '{password}'" in done.stdout
    assert calls.splitlines()[-1] == "kb serve --start-model <>"  # no --demo: the sign-in
    bad = run_demo(tmp_path / "again", "--nope")[0]
    assert bad.returncode == 2 and "usage: scripts/demo.sh [--admin]" in bad.stderr
