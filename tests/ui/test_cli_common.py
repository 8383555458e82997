"""What every `kb` command shares: nothing reaches for a model hub or sends telemetry at run time.
The test processes set the same variables themselves (tests/conftest.py), so `kb` is run here in
a new process whose environment lacks them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from core.offline import OFFLINE_ENV
from ui.cli.common import shown

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, os, subprocess, sys
from ui.cli import main
keys = sys.argv[1].split(",")
before = {k: os.environ.get(k) for k in keys}
try:
    main(sys.argv[2:])
except SystemExit as exit:
    assert not exit.code, exit.code
child = subprocess.run([sys.executable, "-c", "import json, os, sys; "
                        "print(json.dumps({k: os.environ.get(k) for k in sys.argv[1:]}))", *keys],
                       capture_output=True, text=True, check=True).stdout
print(json.dumps({"before": before, "after": {k: os.environ.get(k) for k in keys},
                  "child": json.loads(child)}))
"""


def test_kb_sets_the_offline_variables_for_itself_and_its_children(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(OFFLINE_ENV), "docs", "--json",
         "--store", str(tmp_path / "store")],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["before"] == dict.fromkeys(OFFLINE_ENV)  # the probe starts without them
    assert seen["after"] == OFFLINE_ENV
    assert seen["child"] == OFFLINE_ENV
    assert OFFLINE_ENV["HF_HUB_OFFLINE"] == "1" and OFFLINE_ENV["TRANSFORMERS_OFFLINE"] == "1"


def test_shown_escapes_what_could_start_or_disguise_a_line() -> None:
    assert shown("evil\nname.pdf") == "evil\\nname.pdf"
    assert shown("a\rb\x1b[2Kc\u202ed\u2028e\tf") == "a\\rb\\x1b[2Kc\\u202ed\\u2028e\\tf"
    assert shown("差旅费 2024 (v2).pdf") == "差旅费 2024 (v2).pdf"
