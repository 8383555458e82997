"""What the benchmarks of an API's overhead share: a copy of the sample store served by one `kb
serve` process on loopback with the model unreachable (every answer retrieval-only), the bench
user's token, the same questions asked each way in turn (a shuffled order, seeded) after a
warm-up, and the figures compared way against way.

    with served_sample("kb-mcp-bench-") as (app, token):
        ways = {"api": ask_api, "mcp": ask_tool}          # question -> the answer's mode
        found = ask_in_turn(ways, questions(), rounds=1000, warm=20, seed=41)
    found.report(goal_ms=5.0) | {"mcp_vs_api": compare(found.times, "mcp", "api")}
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import SAMPLE_STORE, Host, ensure_sample_store
from core.errors import KbError
from core.offline import offline_environment
from devtools.app_processes import AppProcess, start_app, stop, wait_ready
from devtools.ports import free_port

REPO = Path(__file__).resolve().parents[2]
WARM_MS, WARM_WINDOW, WARM_LIMIT_S = 200.0, 20, 300.0  # see warm_up
SLOW_MS = 1000.0  # a request this slow is listed in the report (a stall of the machine or app)

Way = Callable[[str], str]  # asks one question one way; the answer's mode


def percentiles(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values)
    return {"p50_ms": round(float(np.percentile(arr, 50)), 2),
            "p95_ms": round(float(np.percentile(arr, 95)), 2),
            "mean_ms": round(float(arr.mean()), 2), "max_ms": round(float(arr.max()), 1)}


def compare(times: dict[str, list[float]], ours: str, base: str) -> dict[str, float]:
    """`ours` against `base` (the same rounds): the difference of their p50 and p95, the ratio
    of their p95, and the p50 and p95 of the round-by-round differences."""
    a, b = percentiles(times[ours]), percentiles(times[base])
    paired = [x - y for x, y in zip(times[ours], times[base], strict=True)]
    return {"p50_diff_ms": round(a["p50_ms"] - b["p50_ms"], 2),
            "p95_diff_ms": round(a["p95_ms"] - b["p95_ms"], 2),
            "p95_ratio": round(a["p95_ms"] / b["p95_ms"], 3),
            "paired_diff_p50_ms": round(float(np.percentile(paired, 50)), 2),
            "paired_diff_p95_ms": round(float(np.percentile(paired, 95)), 2)}


def warm_up(ways: dict[str, Callable[[str], str]], asked: list[str], rounds: int) -> int:
    """Ask `rounds` rounds, then on until a window of them had no slow request (WARM_MS):
    the app loads its faster question encoder in the background (`ui/wiring.py` `WarmUp`),
    and the first questions wait for it, seconds on a busy machine. Returns the rounds asked
    (at most WARM_LIMIT_S worth)."""
    slowest: list[float] = []
    started, n = time.perf_counter(), 0
    while n < rounds or max(slowest[-WARM_WINDOW:]) > WARM_MS:
        if time.perf_counter() - started > WARM_LIMIT_S:
            print(f"warm-up: still slow after {WARM_LIMIT_S:.0f} s; measuring anyway",
                  file=sys.stderr)
            break
        took = []
        for ask in ways.values():
            t = time.perf_counter()
            ask(asked[n % len(asked)])
            took.append((time.perf_counter() - t) * 1000)
        slowest.append(max(took))
        n += 1
    return n


def bench_user(store: Path) -> str:
    """A token of user `bench` (group all) in the store's ledger."""
    from core.config import load_settings
    from ui.wiring import users_for

    settings = load_settings(REPO / "config.toml", environ={}).with_store(store)
    with users_for(settings) as users:
        try:
            users.add("bench", "bench-password-0", ["all"])
        except KbError:  # there from an earlier run
            pass
        return users.new_token("bench")


@contextmanager
def served_sample(prefix: str) -> Iterator[tuple[AppProcess, str]]:
    """`kb serve` over a copy of the sample store (the bench user and its records stay out of
    the original), the model unreachable (connection refused at once), and the bench user's
    token; stopped at the end, its log's warnings printed (retrieval-only answers are the
    point, left out)."""
    offline_environment()
    settings = ensure_sample_store()
    work = Path(tempfile.mkdtemp(prefix=prefix))
    store = work / "store"
    shutil.copytree(SAMPLE_STORE, store)
    token = bench_user(store)
    env = {"KB_EMBED_CACHE": settings.embed.cache, "KB_LLM_RETRIES": "0",
           "KB_LLM_URL": f"http://127.0.0.1:{free_port()}/v1", "KB_LLM_CONNECT_TIMEOUT_S": "1.0"}
    app = start_app(store, env, work)
    try:
        wait_ready(app)
        yield app, token
    finally:
        stop(app)
        warnings = [line for line in app.log.read_text(errors="replace").splitlines()
                    if ("WARNING" in line or "ERROR" in line)
                    and "retrieval-only answer" not in line]
        print(f"app log: {len(warnings)} warnings or errors", *warnings[-5:], sep="\n",
              file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)


@dataclass
class InTurn:
    """What `ask_in_turn` measured: each way's times (ms, round by round), the answers' modes,
    the requests over SLOW_MS ([round, way, ms]), the warm-up's rounds and the host."""

    times: dict[str, list[float]]
    rounds: int
    questions: int
    warm_rounds: int = 0
    host: Host | None = None
    modes: dict[str, int] = field(default_factory=dict)
    slow: list[list[Any]] = field(default_factory=list)

    def report(self, goal_ms: float) -> dict[str, Any]:
        """The report's fields every such benchmark has, each way's percentiles among them."""
        return {"date": time.strftime("%Y-%m-%d", time.gmtime()), "rounds": self.rounds,
                "warm_rounds": self.warm_rounds, "questions": self.questions,
                "slow_requests": self.slow, "goal_ms": goal_ms,
                "modes": dict(sorted(self.modes.items())),
                **{way: percentiles(values) for way, values in self.times.items()}}


def ask_in_turn(ways: dict[str, Way], asked: list[str], rounds: int, warm: int,
                seed: int) -> InTurn:
    """Each round, the next question asked every way, in a shuffled order, after `warm_up`."""
    order = random.Random(seed)
    found = InTurn({way: [] for way in ways}, rounds, min(len(asked), rounds))
    found.warm_rounds = warm_up(ways, asked, warm)
    found.host = Host()
    for n in range(rounds):
        question = asked[(found.warm_rounds + n) % len(asked)]
        for way in order.sample(list(ways), len(ways)):
            started = time.perf_counter()
            mode = ways[way](question)
            took = (time.perf_counter() - started) * 1000
            found.times[way].append(took)
            found.modes[mode] = found.modes.get(mode, 0) + 1
            if took > SLOW_MS:
                found.slow.append([n, way, round(took, 1)])
    return found
