"""`python -m bench.serving.gpu_serve run`: for each variant, its vLLM servers started with `kb llm
serve`'s flags plus the variant's, warmed up, its plan of scenarios driven (bench/serving/gpu_serve/
load.py), the servers stopped; each scenario's figures added to the results file as it ends.

    run --variant 'tuned:rag:64,rag:128=--api-server-count 4' --plan 'rag:1,rag:16' ...
    # NAME[:PLAN]=EXTRA FLAGS; a PLAN is KIND:CONCURRENCY[:REQUESTS],...
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.serving.gpu_serve.load import init_client_process, run_scenario
from bench.serving.gpu_serve.table import row
from bench.serving.gpu_serve.vllm import GpuMonitor, kb_flags, start_server, stop_server


@dataclass
class Session:
    """What the variants of one `run` share."""

    args: argparse.Namespace
    pool: Any  # the client processes
    monitor: GpuMonitor
    prompts: dict[str, Any]
    results: dict[str, Any]  # {"summary": prompts', "runs": [...], "servers": [...]}
    out: Path
    deadline: float  # no scenario starts after it

    def save(self) -> None:
        self.out.write_text(json.dumps(self.results, indent=1, ensure_ascii=False))


def run(a: argparse.Namespace) -> None:
    prompts = json.loads(Path(a.prompts).read_text())
    out_path = Path(a.out)
    results: dict[str, Any] = {"summary": prompts.get("summary"), "runs": [], "servers": []}
    if out_path.exists():
        results = json.loads(out_path.read_text())
    deadline = time.time() + a.budget_s
    ctx = mp.get_context("fork")
    with ctx.Pool(a.procs, initializer=init_client_process, initargs=(a.model,)) as pool:
        mon = GpuMonitor()  # after the fork: the client processes hold no thread
        mon.start()
        session = Session(a, pool, mon, prompts, results, out_path, deadline)
        for variant in a.variant:
            run_variant(session, variant)
    mon.stopped = True
    session.save()


def run_variant(s: Session, variant: str) -> None:
    """One variant, `NAME[:PLAN]=EXTRA FLAGS`: its servers, its warm-up, its plan."""
    name, _, flags = variant.partition("=")
    plan = parse_plan(s.args.plan if ":" not in name else name.split(":", 1)[1], s.prompts)
    name = name.split(":", 1)[0]
    if time.time() > s.deadline - 60:
        print(f"skip {name}: out of time", flush=True)
        return
    started = start_servers(s, name, flags)
    if started is None:
        return
    servers, ready_s = started
    print(f"== {name} ({flags or 'kb flags'}) ready in {ready_s:.0f}s", flush=True)
    a = s.args
    s.results["servers"].append(
        {
            "variant": name,
            "flags": flags,
            "ready_s": round(ready_s, 1),
            "replicas": a.replicas,
            "kb_flags": shlex.join(kb_flags(a.model, a.served, a.port)),
        }
    )
    try:
        run_plan(s, name, flags, plan)
    finally:
        for proc in servers:
            stop_server(proc)


def start_servers(s: Session, name: str, flags: str) -> tuple[list[Any], float] | None:
    """The variant's servers (none with --no-start: the one at --port is driven) and the
    seconds they took to be ready; None, the error recorded, when one did not start."""
    a = s.args
    log = s.out.parent / f"server_{name}.log"
    extra = shlex.split(flags)
    if a.replicas > 1:  # one GPU shared: each replica takes its share of the memory
        extra += ["--gpu-memory-utilization", f"{0.92 / a.replicas:.2f}"]
    servers: list[Any] = []
    ready_s = 0.0
    try:
        for port in [] if a.no_start else [a.port + i for i in range(a.replicas)]:
            proc, took = start_server(a, extra, log, port)
            servers.append(proc)
            ready_s += took
    except RuntimeError as exc:
        print(f"{name}: {exc}", flush=True)
        s.results["servers"].append({"variant": name, "flags": flags, "error": str(exc)})
        for proc in servers:
            stop_server(proc)
        return None
    return servers, ready_s


def run_plan(s: Session, name: str, flags: str, plan: list[tuple[str, int, int]]) -> None:
    """The warm-up (unless --no-warmup), then each scenario of the plan while time is left, its
    row saved and printed."""
    a = s.args
    warm = [("rag", 16, 64)] if a.warmup else []
    for kind, conc, n in warm:
        run_scenario(s.pool, a.procs, s.prompts, kind, conc, n, a, None)
    for kind, conc, n in plan:
        if time.time() > s.deadline:
            print(f"  skip {kind} c={conc}: out of time", flush=True)
            continue
        res = run_scenario(s.pool, a.procs, s.prompts, kind, conc, n, a, s.monitor)
        res["variant"] = name
        res["flags"] = flags
        res["replicas"] = a.replicas
        s.results["runs"].append(res)
        s.save()
        print(row(res), flush=True)


def parse_plan(text: str, prompts: dict[str, Any]) -> list[tuple[str, int, int]]:
    """'rag:1,rag:64:512' -> [(kind, concurrency, requests)]; requests default to
    max(24, 4 x concurrency), at most the workload's prompts."""
    plan = []
    for part in text.split(","):
        bits = part.strip().split(":")
        kind, conc = bits[0], int(bits[1])
        n = int(bits[2]) if len(bits) > 2 else max(24, 4 * conc)
        plan.append((kind, conc, min(n, len(prompts[kind]))))
    return plan
