"""One scenario of `python -m bench.serving.gpu_serve run`: a workload at a concurrency, sent by
closed-loop users (one thread each, the threads spread over client processes) through
`LlmClient.stream` as `Assistant.ask_stream` sends them (streamed, ignore_eos), and the figures of
their requests: throughput, TTFT and end-to-end percentiles, vLLM's counters over the run, GPU
utilisation.

    row = run_scenario(pool, 8, prompts, "rag", 64, 256, args, monitor)   # one dict of figures
"""

from __future__ import annotations

import argparse
import math
import queue
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from assistant.llm.client import LlmClient
from assistant.llm.replicas import ReplicaPool
from assistant.llm.tokens import LocalTokenCounter
from bench.serving.gpu_serve.vllm import GpuMonitor, metrics_of, reset_prefix_cache
from core.errors import KbError

# Tokens out per workload (bench/serving/gpu_serve/prepare.py writes the workloads' prompts).
MAX_TOKENS = {"rag": 256, "rag_rel": 256, "rag_once": 256, "short": 64, "medium": 400, "multi": 150}


class LockedCounter:
    """One tokenizer per client process, shared by its threads."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.lock = threading.Lock()

    def count(self, text: str) -> int:
        with self.lock:
            return int(self.inner.count(text))

    def count_many(self, texts: Any) -> list[int]:
        with self.lock:
            return list(self.inner.count_many(texts))

    def count_messages(self, messages: Any) -> int:
        with self.lock:
            return int(self.inner.count_messages(messages))


_COUNTER: Any = None  # the client process's LockedCounter


def init_client_process(model_dir: str) -> None:
    """The client process's tokenizer, loaded and warmed once (the pool's initializer)."""
    global _COUNTER
    _COUNTER = LockedCounter(LocalTokenCounter(Path(model_dir)))
    _COUNTER.count_messages([{"role": "user", "content": "warm"}])


def client_process(job: dict[str, Any]) -> list[dict[str, Any]]:
    """One client process: `threads` closed-loop users sending `items` with LlmClient, from
    `start_at` on; a record per request."""
    work: queue.Queue[dict[str, Any]] = queue.Queue()
    for it in job["items"]:
        work.put(it)
    records: list[dict[str, Any]] = []
    # Several replicas: one ReplicaPool per client process, shared by its threads, so it
    # balances by requests in flight as `kb serve` does with llm.endpoints.
    pool = None
    if len(job["urls"]) > 1:
        pool = ReplicaPool([make_client(job, u, job["threads"] + 4) for u in job["urls"]])

    def user() -> None:
        client: Any = pool if pool is not None else make_client(job, job["urls"][0], 4)
        try:
            while True:
                try:
                    it = work.get_nowait()
                except queue.Empty:
                    return
                records.append(send(client, it, job["max_tokens"]))
        finally:
            if pool is None:
                client.close()

    delay = job["start_at"] - time.time()
    if delay > 0:
        time.sleep(delay)
    threads = [threading.Thread(target=user) for _ in range(job["threads"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if pool is not None:
        pool.close()
    return records


def make_client(job: dict[str, Any], url: str, connections: int) -> LlmClient:
    return LlmClient(
        url,
        job["served"],
        counter=_COUNTER,
        max_model_len=job["max_model_len"],
        answer_tokens=job["max_tokens"],
        temperature=job["temperature"],
        first_token_timeout_s=300.0,
        total_timeout_s=600.0,
        http=httpx.Client(limits=httpx.Limits(max_connections=connections)),
    )


def send(client: Any, it: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """One streamed request: its start and end (wall clock), TTFT and end-to-end seconds, the
    tokens the server counted, or the error."""
    rec: dict[str, Any] = {"id": it["id"], "start": time.time()}
    t0 = time.perf_counter()
    try:
        with client.stream(
            it["messages"], max_tokens=max_tokens, extra_body={"ignore_eos": True}
        ) as stream:
            for _ in stream:
                if "ttft" not in rec:
                    rec["ttft"] = time.perf_counter() - t0
            usage = stream.usage
        rec["e2e"] = time.perf_counter() - t0
        rec["prompt_tokens"] = usage.prompt_tokens if usage else 0
        rec["completion_tokens"] = usage.completion_tokens if usage else 0
        rec["ok"] = True
    except KbError as exc:
        rec["ok"] = False
        rec["error"] = str(exc)[:300]
    rec["end"] = time.time()
    return rec


def run_scenario(
    pool: Any,
    nprocs: int,
    prompts: dict[str, Any],
    kind: str,
    conc: int,
    n: int,
    a: argparse.Namespace,
    mon: GpuMonitor | None,
) -> dict[str, Any]:
    """The first `n` prompts of workload `kind` sent by `conc` users over at most `nprocs` client
    processes of `pool`, the prefix cache emptied first; their figures."""
    items = prompts[kind][:n]
    procs = max(1, min(nprocs, conc))
    shares = [items[i::procs] for i in range(procs)]
    threads = [conc // procs + (1 if i < conc % procs else 0) for i in range(procs)]
    reset = all([reset_prefix_cache(base) for base in a.bases])
    m0 = metrics_of(a.bases)
    start_at = time.time() + 0.5
    jobs = [
        {
            "urls": [base + "/v1" for base in a.bases],
            "served": a.served,
            "items": shares[i],
            "threads": threads[i],
            "max_tokens": MAX_TOKENS[kind],
            "temperature": a.temperature,
            "max_model_len": 4096,
            "start_at": start_at,
        }
        for i in range(procs)
    ]
    recs = [r for part in pool.map(client_process, jobs) for r in part]
    m1 = metrics_of(a.bases)
    counters = {
        k.removeprefix("vllm:").removesuffix("_total"): m1.get(k, 0.0) - m0.get(k, 0.0) for k in m1
    }
    return {"workload": kind, "concurrency": conc, **figures(recs, procs, reset, counters, mon)}


def figures(
    recs: list[dict[str, Any]],
    procs: int,
    reset: bool,
    counters: dict[str, float],
    mon: GpuMonitor | None,
) -> dict[str, Any]:
    """Requests, errors, throughput and latency percentiles of one scenario's records, the
    prefix-cache hit rate of vLLM's `counters` over it, and the GPU samples of its time."""
    ok = [r for r in recs if r.get("ok")]
    t0 = min(r["start"] for r in recs)
    t1 = max(r["end"] for r in recs)
    dur = t1 - t0
    ttft = [r["ttft"] for r in ok if "ttft" in r]
    e2e = [r["e2e"] for r in ok]
    queries = counters.get("prefix_cache_queries", 0.0)
    gpu = [s for s in (mon.samples if mon else []) if t0 <= s[0] <= t1]
    return {
        "requests": len(recs),
        "ok": len(ok),
        "errors": sorted({r.get("error", "")[:160] for r in recs if not r.get("ok")})[:3],
        "client_procs": procs,
        "duration_s": round(dur, 2),
        "req_per_s": round(len(ok) / dur, 2),
        "out_tok_per_s": round(sum(r["completion_tokens"] for r in ok) / dur, 0),
        "prompt_tokens_mean": mean(r["prompt_tokens"] for r in ok),
        "completion_tokens_mean": mean((r["completion_tokens"] for r in ok), 1),
        "ttft_ms_p50": _ms(pct(ttft, 50)),
        "ttft_ms_p95": _ms(pct(ttft, 95)),
        "ttft_ms_p99": _ms(pct(ttft, 99)),
        "e2e_s_p50": _s(pct(e2e, 50)),
        "e2e_s_p95": _s(pct(e2e, 95)),
        "prefix_cache_hit_rate": round(counters.get("prefix_cache_hits", 0.0) / queries, 4)
        if queries
        else None,
        "cache_reset": reset,
        "server_counters": counters,
        "gpu_util_mean": round(statistics.mean(s[1] for s in gpu), 1) if gpu else None,
        "gpu_mem_mib_max": max((s[2] for s in gpu), default=None),
    }


def mean(values: Any, digits: int = 0) -> float | None:
    """The mean rounded to `digits`, None for no values."""
    values = list(values)
    return round(statistics.mean(values), digits) if values else None


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000, 1)


def _s(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
