"""How fast a chat platform's callback is acknowledged while others arrive (the goal: within
1 s under 20 concurrent events; Slack allows 3 s, Feishu 3 s, WeCom 5 s before they retry).

A real `kb serve` process (config.toml, a fresh store of data/samples/docs/Employee-Leave-Policy
.pdf, the model unreachable: retrieval-only answers) with Slack enabled and its Web API a
loopback stand-in (devtools/chat_platforms.py). Each round sends one signed question alone (the
baseline), then 20 at once from 20 threads (different users and event ids), timing each
callback from send to its 200; then waits until all 21 are answered in the stand-in (their
answers run after the acknowledgement).

    .venv/bin/python -m bench.channels_ack --rounds 3 > bench/results/issue42-channels-ack.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import Host
from core.config import load_settings
from core.offline import offline_environment
from devtools.app_processes import REPO, start_app, stop, wait_ready
from devtools.chat_platforms import StandIn, slack_request, slack_routes
from devtools.ports import free_port
from ui.wiring import store_for, users_for

SECRET = "bench-signing-secret"
DOCUMENT = REPO / "data" / "samples" / "docs" / "Employee-Leave-Policy.pdf"
QUESTION = "How many days of annual leave do I get?"


def event(n: int) -> dict[str, Any]:
    return {"type": "event_callback", "event_id": f"EvBench{n:06d}-{time.time_ns()}",
            "event": {"type": "message", "channel_type": "im", "user": f"U{n:04d}",
                      "channel": f"D{n:04d}", "text": QUESTION, "ts": f"{time.time():.6f}"}}


def acknowledge(client: httpx.Client, url: str, n: int,
                ready: threading.Barrier | None = None) -> float:
    """Seconds from sending one signed event to its 200 (the client, its connection and the
    signature made before the clock starts; `ready`: sent when every thread is ready)."""
    headers, body = slack_request(SECRET, event(n))
    request = client.build_request("POST", url, headers=headers, content=body)
    if ready is not None:
        ready.wait()
    started = time.perf_counter()
    reply = client.send(request)
    elapsed = time.perf_counter() - started
    if reply.status_code != 200:
        raise RuntimeError(f"callback answered {reply.status_code}: {reply.text}")
    return elapsed


def burst(url: str, count: int, first: int) -> list[float]:
    times: list[float] = [0.0] * count
    ready = threading.Barrier(count)
    clients = [httpx.Client(timeout=30) for _ in range(count)]

    def one(i: int) -> None:
        times[i] = acknowledge(clients[i], url, first + i, ready)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for client in clients:
        client.close()
    return times


def run(rounds: int, concurrent: int, folder: Path) -> dict[str, Any]:
    host, store = Host(), folder / "store"
    with StandIn(slack_routes({}, {})) as api:
        env = {"KB_CHANNELS_SLACK_ENABLED": "true", "KB_CHANNELS_SLACK_API_URL": api.url,
               "KB_CHANNELS_USER_PER_MINUTE": "1000", "KB_CHANNELS_CHAT_PER_MINUTE": "1000",
               "KB_SLACK_SIGNING_SECRET": SECRET, "KB_SLACK_BOT_TOKEN": "xoxb-bench",
               "KB_LLM_URL": f"http://127.0.0.1:{free_port()}/v1", "KB_LLM_RETRIES": "0",
               "KB_LLM_CONNECT_TIMEOUT_S": "1.0"}
        app = start_app(store, env, folder)
        try:
            wait_ready(app)
            url = app.url + "channels/slack/events"
            alone_client = httpx.Client(timeout=30)
            acknowledge(alone_client, url, 0)  # the first question warms the process
            api.wait_posts(1, timeout_s=120)
            alone, together, answered = [], [], []
            for r in range(rounds):
                api.clear()
                alone.append(acknowledge(alone_client, url, 1000 * (r + 1)))
                started = time.perf_counter()
                together += burst(url, concurrent, 1000 * (r + 1) + 1)
                api.wait_posts(concurrent + 1, timeout_s=300)
                answered.append(time.perf_counter() - started)
        finally:
            stop(app)
    ms = [1000 * t for t in together]
    return {
        "command": "python -m bench.channels_ack " + " ".join(sys.argv[1:]),
        "host": host.report(), "date": time.strftime("%Y-%m-%d"), "rounds": rounds,
        "concurrent": concurrent,
        "alone_ms": [round(1000 * t, 1) for t in alone],
        "concurrent_max_ms": round(max(ms), 1),
        "concurrent_median_ms": round(statistics.median(ms), 1),
        "concurrent_p95_ms": round(sorted(ms)[int(0.95 * (len(ms) - 1))], 1),
        "ratio_max_to_alone": round(max(ms) / (1000 * statistics.median(alone)), 1),
        "all_answered_s": [round(t, 1) for t in answered],
        "goal_max_ms": 1000, "goal_met": max(ms) <= 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=20)
    args = parser.parse_args()
    offline_environment()
    folder = Path(tempfile.mkdtemp(prefix="kb-channels-ack-"))
    try:
        settings = load_settings(REPO / "config.toml").with_store(folder / "store")
        from ingest.pipeline import ingest_paths

        with store_for(settings) as store:
            ingest_paths(store, [DOCUMENT])
        with users_for(settings) as users:  # kb serve wants an account; the askers are unmapped
            users.add("alice", "bench-password", ["all"], is_admin=True)
        print(json.dumps(run(args.rounds, args.concurrent, folder)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
