"""What a retention pass costs the questions asked meanwhile (goal: `POST /api/ask` p95 within
10% while a pass runs over a million logged questions).

`kb serve` on loopback over a copy of the sample store whose ledger holds N logged questions
(each with an answer, a tenth of them rated, every other one with a phone number in it, written
with masking off as a ledger from before it would hold them), the model unreachable
(retrieval-only answers: the shortest path a question takes, where a pass shows most). One asker
after another through `POST /api/ask`, timed throughout, while `kb prune` runs twice in a
process of its own, as the schedule runs it (a child of `kb serve`, `kb worker` or `kb sync`):

1. the masking pass: no limits (every `*_days` 0), masking on: the text of all N questions
   read and those with a number masked, a batch at a time;
2. the pruning pass: limits of a few seconds: all N questions and their feedback deleted, a
   batch at a time.

Each pass's p95 is compared with the p95 of the questions asked while no pass ran (before,
between and after them), in the same run, as a ratio; the pass's own report (batches, the
longest batch's transaction) is kept beside it.

    .venv/bin/python -m bench.serving.retention_pass --questions 1000000
    .venv/bin/python -m bench retention           # the quick look: 20,000 questions
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.common import SAMPLE_STORE, Host, ensure_sample_store, questions
from bench.serving.in_turn import bench_user
from core.offline import offline_environment
from core.types import Answer
from devtools.app_processes import start_app, stop, wait_ready
from devtools.ports import free_port
from store.ledger import Ledger

REPO = Path(__file__).resolve().parents[2]
GOAL_RATIO = 1.10
NO_LIMITS = {f"KB_RETENTION_{kind}_DAYS": "0" for kind in
             ("QUESTIONS", "GAPS", "FEEDBACK", "CONVERSATIONS", "UPLOADS", "LOGS")}
SECONDS = 1 / 86400  # a day's fraction: a limit of a few seconds


def seed(ledger_path: Path, n: int, asked: list[str]) -> float:
    """N questions with answers (and a tenth rated) through the ledger's own methods, masking
    off; seconds it took."""
    started = time.perf_counter()
    ledger = Ledger(ledger_path)
    try:
        answer = Answer("年假可以结转，最多5天，须在次年3月31日前休完 [1]。" * 4, mode="generated",
                        timings_ms={"retrieve": 21.5, "pack": 3.1, "first_token": 310.0,
                                    "total": 1250.0})
        for i in range(n):
            text = asked[i % len(asked)]
            if i % 2:
                text += f" 电话 138{i % 10**8:08d}"
            qid = ledger.record_question(f"user{i % 500}", text, answer)
            if i % 10 == 0:
                ledger.replace_feedback(qid, f"user{i % 500}", -1 if i % 20 else 1, "")
    finally:
        ledger.close()
    return time.perf_counter() - started


def percentiles(ms: list[float]) -> dict[str, float]:
    arr = np.asarray(ms)
    return {"n": len(ms), "p50_ms": round(float(np.percentile(arr, 50)), 1),
            "p95_ms": round(float(np.percentile(arr, 95)), 1),
            "max_ms": round(float(arr.max()), 1)}


class Asker:
    """One asker after another through `POST /api/ask`, each question's time kept under the
    phase it began in."""

    def __init__(self, url: str, token: str, asked: list[str]) -> None:
        self.client = httpx.Client(base_url=url, timeout=300,
                                   headers={"Authorization": f"Bearer {token}"})
        self.asked, self.phase = asked, "warm"
        self.times: dict[str, list[float]] = {}
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            phase = self.phase
            started = time.perf_counter()
            reply = self.client.post("api/ask", json={"question": self.asked[n % len(self.asked)]})
            took = (time.perf_counter() - started) * 1000
            if reply.status_code != 200:
                self.errors += 1
            self.times.setdefault(phase, []).append(took)
            n += 1

    def __enter__(self) -> Asker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=300)
        self.client.close()


def run_pass(store: Path, env: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
    """`kb prune --json` over `store` in a process of its own: its report, and how long the
    process ran."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "from ui.cli import main; main()", "prune", "--json", "--config",
         str(REPO / "config.toml"), "--store", str(store)],
        cwd=REPO, env={**os.environ, **env, **limits}, capture_output=True, text=True,
        check=False)
    if done.returncode:
        raise RuntimeError(f"kb prune failed:\n{done.stdout}\n{done.stderr}")
    return {"process_s": round(time.perf_counter() - started, 1),
            **json.loads(done.stdout.strip().splitlines()[-1])}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1_000_000, help="questions logged")
    parser.add_argument("--quiet-s", type=float, default=60.0,
                        help="seconds asked with no pass running, before, between and after")
    parser.add_argument("--warm-s", type=float, default=20.0, help="seconds asked, not timed")
    args = parser.parse_args(argv)
    offline_environment()
    settings = ensure_sample_store()
    work = Path(tempfile.mkdtemp(prefix="kb-retention-bench-"))
    store = work / "store"
    shutil.copytree(SAMPLE_STORE, store)
    asked = questions()
    seed_s = seed(store / "ledger.sqlite", args.questions, asked)
    token = bench_user(store)
    env = {"KB_EMBED_CACHE": settings.embed.cache, "KB_LLM_RETRIES": "0",
           "KB_LLM_URL": f"http://127.0.0.1:{free_port()}/v1", "KB_LLM_CONNECT_TIMEOUT_S": "1.0",
           "KB_RETENTION_EVERY_HOURS": "0"}  # the passes are this bench's own
    passes: dict[str, Any] = {}
    app = start_app(store, env, work)
    try:
        wait_ready(app)
        with Asker(app.url, token, asked) as asker:
            time.sleep(args.warm_s)
            host = Host()
            for name, limits in (("masking", NO_LIMITS), ("pruning", {
                    **{k: f"{5 * SECONDS:.8f}" for k in NO_LIMITS}})):
                asker.phase = "quiet"
                time.sleep(args.quiet_s)
                asker.phase = name
                passes[name] = run_pass(store, env, limits)
            asker.phase = "quiet"
            time.sleep(args.quiet_s)
        errors = asker.errors
        times = asker.times
    finally:
        stop(app)
        shutil.rmtree(work, ignore_errors=True)
    quiet = percentiles(times["quiet"])
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()), "questions_logged": args.questions,
        "seed_s": round(seed_s, 1), "ledger": "sqlite", "errors": errors,
        "goal": f"p95 while a pass runs <= {GOAL_RATIO} x p95 without", "quiet": quiet,
    }
    for name, found in passes.items():
        during = percentiles(times[name])
        report[name] = {**found, "asked": during,
                        "p95_ratio": round(during["p95_ms"] / quiet["p95_ms"], 3)}
    report["goal_met"] = errors == 0 and all(report[name]["p95_ratio"] <= GOAL_RATIO
                                             for name in passes)
    report["host"] = host.report()
    print(json.dumps(report, indent=1, ensure_ascii=False))
    return report


if __name__ == "__main__":
    main()
