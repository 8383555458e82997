"""Load: many employees asking at once, against the real app on loopback with the real vLLM CPU
server (the tiny random ERNIE of the tests), half through the page (Gradio's queue, driven over
HTTP by gradio_client, logged in) and half through `POST /api/ask` (a bearer token). Bounded:
127.0.0.1 only, a fixed number of questions per asker, and a time limit for the whole run
(questions not finished by then count as errors).

It counts errors (exceptions, non-200 replies, "busy" refusals, unfinished questions),
length refusals (the prompt or max_tokens refused as too long, by our budget or by vLLM: read
from the log), and answers without the model (retrieval-only while the server is up), and
prints p50/p95 seconds per question under load beside a baseline measured in the same run:
the same questions asked by one asker alone.

    .venv/bin/python bench/load.py                        # 50 askers (25 page, 25 API) x 2
    .venv/bin/python bench/load.py --askers 8 --questions 1 --limit-s 300

tests/ui/test_load.py runs a short form (8 askers) in CI with `run_load` from here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# What a length refusal logs: our budget (PromptTooLong), vLLM's 400, the one-time shrink.
LENGTH = re.compile(r"too long|for length|exceeds the \d+-token window")
MODE = re.compile(r'data-mode="([a-z_]+)"')


@dataclass
class Outcome:
    """One question: how it went and how long it took."""

    via: str  # "page" or "api"
    seconds: float
    mode: str = ""  # the answer's mode; empty on error
    error: str = ""


@dataclass
class LoadResult:
    askers: int
    outcomes: list[Outcome] = field(default_factory=list)
    length_refusals: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def errors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.error]

    @property
    def without_model(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.mode == "retrieval_only"]

    def percentile(self, q: float, via: str | None = None) -> float:
        times = sorted(o.seconds for o in self.outcomes
                       if not o.error and (via is None or o.via == via))
        if not times:
            return float("nan")
        if len(times) == 1:
            return times[0]
        return statistics.quantiles(times, n=100, method="inclusive")[int(q) - 1]


class LengthWatch(logging.Handler):
    """Collects the log lines that say a prompt or max_tokens was refused for length."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if LENGTH.search(message):
            self.lines.append(message[:300])


def ask_api(url: str, token: str, question: str, timeout_s: float) -> Outcome:
    started = time.perf_counter()
    try:
        reply = httpx.post(url + "api/ask", json={"question": question}, timeout=timeout_s,
                           headers={"Authorization": f"Bearer {token}"})
    except httpx.HTTPError as exc:
        return Outcome("api", time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
    took = time.perf_counter() - started
    if reply.status_code != 200:
        return Outcome("api", took, error=f"HTTP {reply.status_code}: {reply.text[:200]}")
    return Outcome("api", took, mode=str(reply.json().get("mode")))


def ask_page(client: Any, question: str, timeout_s: float) -> Outcome:
    """One question through the page's streaming `/ask` event, to its finished answer."""
    started = time.perf_counter()
    try:
        job = client.submit(question, "en", api_name="/ask")
        deadline = started + timeout_s
        while not job.done():
            if time.perf_counter() > deadline:
                job.cancel()
                return Outcome("page", time.perf_counter() - started,
                               error=f"unfinished after {timeout_s:.0f}s")
            time.sleep(0.01)
        outputs = job.outputs()
        job.result()  # raises what the handler raised (gr.Error: busy, not signed in, ...)
    except Exception as exc:  # any failure of the page counts
        return Outcome("page", time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
    took = time.perf_counter() - started
    content = outputs[-1][0][-1]["content"] if outputs and outputs[-1][0] else ""
    text = content if isinstance(content, str) else "".join(
        part.get("text", "") for part in content if isinstance(part, dict))
    found = MODE.search(text)
    if found is None:
        return Outcome("page", took, error=f"no finished answer: {text[:200]}")
    return Outcome("page", took, mode=found.group(1))


def run_load(
    url: str,
    token: str,
    page_client: Callable[[], Any],
    pages: int,
    apis: int,
    questions: Sequence[str],
    per_asker: int,
    limit_s: float,
) -> LoadResult:
    """`pages` askers through the page and `apis` through the API, all started together, each
    asking `per_asker` questions one after another (asker i starts at question i); what is
    not finished within `limit_s` is an error."""
    askers = pages + apis
    clients = [page_client() for _ in range(pages)]  # logged in before the clock starts
    watch = LengthWatch()
    logging.getLogger().addHandler(watch)
    result = LoadResult(askers)
    start = threading.Barrier(askers)
    deadline = 0.0

    def asker(i: int) -> list[Outcome]:
        nonlocal deadline
        start.wait()
        deadline = deadline or time.perf_counter() + limit_s
        done: list[Outcome] = []
        for k in range(per_asker):
            left = deadline - time.perf_counter()
            if left <= 0:
                done.append(Outcome("page" if i < pages else "api", 0.0,
                                    error=f"not started within {limit_s:.0f}s"))
                continue
            question = questions[(i + k) % len(questions)]
            done.append(ask_page(clients[i], question, left) if i < pages
                        else ask_api(url, token, question, left))
        return done

    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(askers) as pool:
            for outcomes in pool.map(asker, range(askers)):
                result.outcomes += outcomes
    finally:
        logging.getLogger().removeHandler(watch)
        for client in clients:
            client.close()
    result.wall_s = time.perf_counter() - started
    result.length_refusals = watch.lines
    return result


def report_line(name: str, r: LoadResult) -> str:
    modes: dict[str, int] = {}
    for o in r.outcomes:
        modes[o.mode or "error"] = modes.get(o.mode or "error", 0) + 1
    return (f"| {name} | {r.askers} | {len(r.outcomes)} | {len(r.errors)} | "
            f"{len(r.length_refusals)} | {len(r.without_model)} | "
            f"{r.percentile(50):.2f} | {r.percentile(95):.2f} | "
            f"{r.percentile(50, 'page'):.2f} / {r.percentile(50, 'api'):.2f} | "
            f"{len(r.outcomes) / r.wall_s:.2f} | {json.dumps(modes, sort_keys=True)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--askers", type=int, default=50)
    parser.add_argument("--questions", type=int, default=2, help="questions per asker")
    parser.add_argument("--limit-s", type=float, default=900.0, help="time limit of the run")
    parser.add_argument("--baseline", type=int, default=6, help="questions asked alone first")
    parser.add_argument("--docs", default=str(REPO / "data" / "samples" / "docs"))
    args = parser.parse_args()

    import uvicorn
    from gradio_client import Client

    from assistant.serving.serve import VllmServer
    from assistant.serving.testmodel import build_test_model
    from core.config import load_settings
    from devtools.vllm_server import CACHE_DIR, MODEL_DIR, READY_TIMEOUT_S, free_port
    from tests.support.stores import ingest_paths
    from ui.cli.common import offline_environment
    from ui.web.server import create_server
    from ui.wiring import open_services, users_for

    offline_environment()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    questions = [json.loads(line)["question"]
                 for line in (REPO / "data" / "samples" / "qa.jsonl").read_text().splitlines()
                 if line.strip()]
    work = Path(tempfile.mkdtemp(prefix="kb-load-"))
    port = free_port()
    settings = load_settings(REPO / "config.toml", environ={}).with_store(work / "store")
    llm = dataclasses.replace(settings.llm, model=str(build_test_model(MODEL_DIR)), port=port,
                              url=f"http://127.0.0.1:{port}/v1")
    settings = dataclasses.replace(settings, llm=llm)
    server = VllmServer.for_settings(settings, cache_dir=CACHE_DIR, log_path=work / "vllm.log")
    server.start()
    try:
        server.wait_ready(READY_TIMEOUT_S)
        report = ingest_paths(settings, [Path(args.docs)])
        print(f"store: {report.counts} (vLLM log {work / 'vllm.log'})", flush=True)
        with users_for(settings) as users:
            users.add("load", "load-password", ["all"])
            token = users.new_token("load")
        services = open_services(settings)
        app = create_server(services, demo=False)
        app_port = free_port()
        web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=app_port,
                                            log_level="warning"))
        thread = threading.Thread(target=web.run, daemon=True)
        thread.start()
        while not web.started:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{app_port}/"

        def page_client() -> Any:
            return Client(url, auth=("load", "load-password"), verbose=False,
                          download_files=False)

        try:
            run_load(url, token, page_client, 1, 1, questions, 1, 300)  # warm: embedder...
            alone_api = run_load(url, token, page_client, 0, 1, questions, args.baseline, 600)
            alone_page = run_load(url, token, page_client, 1, 0, questions, args.baseline, 600)
            pages = args.askers // 2
            loaded = run_load(url, token, page_client, pages, args.askers - pages, questions,
                              args.questions, args.limit_s)
        finally:
            web.should_exit = True
            thread.join(timeout=10)
            services.close()
        print(f"\n{time.strftime('%Y-%m-%d')}; {args.askers} askers x {args.questions} "
              f"questions, limit {args.limit_s:.0f}s; baseline: one asker alone\n")
        print("| run | askers | questions | errors | length refusals | without the model | "
              "p50 s | p95 s | p50 page / api s | questions/s | modes |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        print(report_line("alone, API", alone_api))
        print(report_line("alone, page", alone_page))
        print(report_line("at once, page + API", loaded))
        base = statistics.median(o.seconds for o in alone_api.outcomes + alone_page.outcomes)
        print(f"\nratio to one asker alone (p50 {base:.2f}s, page and API): p50 "
              f"{loaded.percentile(50) / base:.1f}x, p95 {loaded.percentile(95) / base:.1f}x")
        for o in loaded.errors[:10]:
            print(f"error ({o.via}): {o.error}")
        for line in loaded.length_refusals[:10]:
            print(f"length refusal: {line}")
        ok = not loaded.errors and not loaded.length_refusals and not loaded.without_model
        return 0 if ok else 1
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
