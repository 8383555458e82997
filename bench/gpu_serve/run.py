"""GPU serving benchmark: kb's own prompts, sent by kb's own client, to vLLM on a GPU.

Three steps, the first on any machine with the kb environment, the others where the GPU is:

    # 1. kb retrieves and packs every dev-set question (and reworded copies of it), with the
    #    served model's tokenizer, into prompts.json (no GPU, no model server needed)
    .venv/bin/python bench/gpu_serve.py prepare --tokenizer /tmp/ernie-tok \
        --out /tmp/gpu/prompts.json
    # 2. on the GPU machine: start vLLM with `kb llm serve`'s flags plus each variant's extra
    #    flags, warm it up, drive it with LlmClient (streamed, ignore_eos) at each concurrency
    python3 bench/gpu_serve.py run --prompts prompts.json --model /tmp/ernie --out results.json \\
        --variant 'kb=' --variant 'tuned=--api-server-count 4 --max-num-batched-tokens 16384' \\
        --plan 'rag:1,rag:16,rag:64,rag:256'
    # 3. anywhere: Markdown tables such as those of docs/benchmarks-history.md
    python3 bench/gpu_serve.py table results.json

`run` imports only assistant.{config,errors,llm,tokens,serve} (httpx and transformers), so those
files and this script are all the GPU machine needs besides vLLM itself. Requests go through
`LlmClient.stream` exactly as `Assistant.ask_stream` sends them (the token budget checked with
the served tokenizer first), one closed-loop "user" per thread, threads spread over client
processes. Before every measured run the server's prefix cache is emptied
(`POST /reset_prefix_cache`, which needs VLLM_SERVER_DEV_MODE=1), so a run reuses only what it
shared within itself. The prefix-cache hit rate is read from vLLM's /metrics.

Workloads (`prepare`):
  rag        each dev question kb answers with the model (abstentions are never sent), asked by
             5 employees in different words (a greeting, "quick question", thanks, ...), each
             wording retrieved and packed by kb: passages in document order (assistant/pack.py)
  rag_rel    the same packed passages shown best-first, as kb packed them before: the "before"
             of the stable order
  rag_once   each dev question once, in its own words (no rewording)
  short      a one-line question alone, 64 tokens out
  medium     a one-line request for a detailed explanation, 400 tokens out
  multi      kb's system rules, earlier turns (questions and passage-quoting answers) up to a
             1,200-token prompt, then a follow-up question, 150 tokens out
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import queue
import random
import shlex
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's modules first, whatever PYTHONPATH holds

MAX_TOKENS = {"rag": 256, "rag_rel": 256, "rag_once": 256, "short": 64, "medium": 400, "multi": 150}
REWORD = {
    "en": ["{q}", "Hi, {q}", "Quick question: {q}", "{q} Thanks!", "Could you tell me: {q}"],
    "zh": ["{q}", "你好，{q}", "请问：{q}", "{q}谢谢！", "想咨询一下：{q}"],
}
MEDIUM = {"en": "Explain in detail, with examples: {q}", "zh": "请详细解释并举例说明：{q}"}
SETS = ("public", "public2")


# ------------------------------------------------------------------------------------ prepare
def prepare(args: argparse.Namespace) -> None:
    """kb's retrieval and packing over the dev sets -> prompts.json."""
    import dataclasses

    from assistant.answer import should_abstain
    from assistant.pack import pack, plan_budget, render_passages
    from assistant.prompt import SYSTEM, build_messages
    from assistant.retrieve.retriever import Retriever
    from assistant.tokens import LocalTokenCounter
    from core.config import load_settings
    from ingest.pipeline import ingest_paths
    from store.store import open_store
    from ui.cli.common import offline_environment

    offline_environment()
    base = load_settings(REPO / "config.toml")
    base = dataclasses.replace(
        base,
        llm=dataclasses.replace(base.llm, model=str(args.tokenizer)),
        embed=dataclasses.replace(base.embed, cache=str(args.work / "embed-cache.sqlite")),
        ingest=dataclasses.replace(base.ingest, folder_groups={}),
    )
    counter = LocalTokenCounter(Path(args.tokenizer))
    llm = base.llm
    rng = random.Random(12)
    out: dict[str, Any] = {k: [] for k in MAX_TOKENS}
    stats = {"questions": 0, "abstained": 0, "wordings_abstained": 0}
    for name in SETS:
        set_dir = args.eval / name
        settings = base.with_store(args.work / f"store-{name}")
        store = open_store(settings)
        if not store.ledger.chunk_count():
            ingest_paths(store, [set_dir / "docs"])
        retriever = Retriever(settings, store)
        questions = [json.loads(x) for x in (set_dir / "qa.jsonl").read_text().splitlines() if x]
        groups = settings.ingest.default_groups
        answered: list[tuple[dict[str, Any], list[Any]]] = []
        for qi, q in enumerate(questions):
            stats["questions"] += 1
            if qi % 25 == 0:
                print(f"{name}: question {qi} of {len(questions)}", flush=True)
            for i, form in enumerate(REWORD[q["lang"]]):
                wording = form.format(q=q["question"])
                retrieval = retriever.retrieve(wording, groups)
                lang = "zh" if retrieval.lang == "zh" else "en"
                if should_abstain(retrieval, settings):
                    stats["abstained" if i == 0 else "wordings_abstained"] += 1
                    if i == 0:
                        break  # kb never sends this question to the model
                    continue
                budget = plan_budget(
                    wording,
                    [],
                    lang,
                    counter.count,
                    max_model_len=llm.max_model_len,
                    answer_tokens=llm.answer_tokens,
                )
                packed = pack(retrieval.passages, budget.passages, counter.count)
                best_first = sorted(packed, key=lambda p: -p.score)
                doc = build_messages(wording, render_passages(packed), [], lang)
                rel = build_messages(wording, render_passages(best_first), [], lang)
                item = {"id": f"{q['id']}#{i}", "messages": doc}
                out["rag"].append(item)
                out["rag_rel"].append({"id": item["id"], "messages": rel})
                if i == 0:
                    out["rag_once"].append(item)
                    answered.append((q, packed))
        for q, _ in answered:
            lang = q["lang"]
            out["short"].append(
                {"id": q["id"], "messages": [{"role": "user", "content": q["question"]}]}
            )
            out["medium"].append(
                {
                    "id": q["id"],
                    "messages": [{"role": "user", "content": MEDIUM[lang].format(q=q["question"])}],
                }
            )
        # multi-turn: earlier turns of the same language, answers quoting their passages
        for lang in ("en", "zh"):
            pool = [(q, p) for q, p in answered if q["lang"] == lang]
            for j, (q, _) in enumerate(pool):
                history: list[dict[str, str]] = []
                k = j
                while True:
                    k = (k + 1) % len(pool)
                    past_q, past_packed = pool[k]
                    reply = (
                        past_q["answer"]
                        + " "
                        + " ".join(
                            f"{p.text.strip()} [{n}]" for n, p in enumerate(past_packed[:2], 1)
                        )
                    )
                    trial = [
                        *history,
                        {"role": "user", "content": past_q["question"]},
                        {"role": "assistant", "content": reply},
                    ]
                    msgs = [
                        {"role": "system", "content": SYSTEM[lang]},
                        *trial,
                        {"role": "user", "content": q["question"]},
                    ]
                    n = counter.count_messages(msgs)
                    if n >= args.multi_tokens or len(trial) > 12:
                        # cut the last answer so the whole prompt lands on the target
                        over = n - args.multi_tokens
                        text = trial[-1]["content"]
                        while over > 0 and len(text) > 20:
                            text = text[: max(20, len(text) - max(1, over))]
                            trial[-1] = {"role": "assistant", "content": text}
                            msgs = [
                                {"role": "system", "content": SYSTEM[lang]},
                                *trial,
                                {"role": "user", "content": q["question"]},
                            ]
                            over = counter.count_messages(msgs) - args.multi_tokens
                        break
                    history = trial
                out["multi"].append({"id": q["id"], "messages": msgs})
        store.close()
    for key in ("rag", "short", "medium", "multi", "rag_once"):
        order = list(range(len(out[key])))
        rng.shuffle(order)
        out[key] = [out[key][i] for i in order]
        if key == "rag":  # the "before" list in the same request order
            out["rag_rel"] = [out["rag_rel"][i] for i in order]
    summary: dict[str, Any] = dict(stats)
    for key, items in out.items():
        counts = [counter.count_messages(it["messages"]) for it in items]
        for it, n in zip(items, counts, strict=True):
            it["prompt_tokens"] = n
        summary[key] = {
            "prompts": len(items),
            "tokens_mean": round(statistics.mean(counts), 1),
            "tokens_min": min(counts),
            "tokens_max": max(counts),
        }
    summary["ideal_hit_rate"] = {
        k: ideal_hit_rate(out[k], counter) for k in ("rag", "rag_rel", "rag_once")
    }
    out["summary"] = summary
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, ensure_ascii=False))
    print(json.dumps(summary, indent=1, ensure_ascii=False))


def ideal_hit_rate(items: list[dict[str, Any]], counter: Any, block: int = 16) -> float:
    """Share of prompt tokens an unbounded prefix cache of `block`-token blocks would reuse when
    the prompts arrive in this order (vLLM's rule: whole blocks of the longest cached prefix,
    never the prompt's last token)."""
    tok = counter._tokenizer  # noqa: SLF001 - the bench needs the ids, not just counts
    seen: set[int] = set()
    hit = total = 0
    for it in items:
        ids = tok(counter.render(it["messages"]), add_special_tokens=False)["input_ids"]
        total += len(ids)
        chain, cached, hashes = 0, True, []
        for b in range(len(ids) // block):
            chain = hash((chain, tuple(ids[b * block : (b + 1) * block])))
            hashes.append(chain)
            if cached and chain in seen and (b + 1) * block < len(ids):
                hit += block
            else:
                cached = False
        seen.update(hashes)
    return round(hit / total, 4) if total else 0.0


# ----------------------------------------------------------------------------------- client
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


_COUNTER: Any = None


def _init_worker(model_dir: str) -> None:
    global _COUNTER
    from assistant.tokens import LocalTokenCounter

    _COUNTER = LockedCounter(LocalTokenCounter(Path(model_dir)))
    _COUNTER.count_messages([{"role": "user", "content": "warm"}])


def _users(job: dict[str, Any]) -> list[dict[str, Any]]:
    """One client process: `threads` closed-loop users sending `items` with LlmClient."""
    import httpx

    from assistant.llm import LlmClient
    from core.errors import KbError

    work: queue.Queue[dict[str, Any]] = queue.Queue()
    for it in job["items"]:
        work.put(it)
    records: list[dict[str, Any]] = []

    def make_client(url: str, connections: int) -> LlmClient:
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

    # Several replicas: one ReplicaPool per client process, shared by its threads, so it
    # balances by requests in flight as `kb serve` does with llm.endpoints.
    pool = None
    if len(job["urls"]) > 1:
        from assistant.replicas import ReplicaPool

        pool = ReplicaPool([make_client(u, job["threads"] + 4) for u in job["urls"]])

    def user() -> None:
        client: Any = pool if pool is not None else make_client(job["urls"][0], 4)
        try:
            while True:
                try:
                    it = work.get_nowait()
                except queue.Empty:
                    return
                rec: dict[str, Any] = {"id": it["id"], "start": time.time()}
                t0 = time.perf_counter()
                try:
                    with client.stream(
                        it["messages"],
                        max_tokens=job["max_tokens"],
                        extra_body={"ignore_eos": True},
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
                records.append(rec)
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


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def metrics(base: str) -> dict[str, float]:
    """vLLM's counters we report (summed over label sets)."""
    want = (
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:num_preemptions_total",
    )
    out: dict[str, float] = {}
    try:
        text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    except OSError as exc:
        return {"error": 1.0} if exc else {}
    for line in text.splitlines():
        for w in want:
            if line.startswith(w + "{") or line.startswith(w + " "):
                out[w] = out.get(w, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def metrics_of(bases: list[str]) -> dict[str, float]:
    """`metrics` summed over the replicas."""
    out: dict[str, float] = {}
    for base in bases:
        for key, value in metrics(base).items():
            out[key] = out.get(key, 0.0) + value
    return out


def reset_prefix_cache(base: str) -> bool:
    req = urllib.request.Request(base + "/reset_prefix_cache", data=b"", method="POST")
    try:
        urllib.request.urlopen(req, timeout=30).read()
        return True
    except OSError:
        return False


class GpuMonitor(threading.Thread):
    """nvidia-smi utilisation and memory, every 0.5 s."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float, float]] = []
        self.stopped = False

    def run(self) -> None:
        while not self.stopped:
            try:
                line = (
                    subprocess.run(
                        [
                            "nvidia-smi",
                            "--query-gpu=utilization.gpu,memory.used",
                            "--format=csv,noheader,nounits",
                        ],
                        capture_output=True,
                        text=True,
                        timeout=5,
                    )
                    .stdout.strip()
                    .splitlines()[0]
                )
                util, mem = (float(x) for x in line.split(","))
                self.samples.append((time.time(), util, mem))
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                pass
            time.sleep(0.5)


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
    recs = [r for part in pool.map(_users, jobs) for r in part]
    m1 = metrics_of(a.bases)
    ok = [r for r in recs if r.get("ok")]
    t0 = min(r["start"] for r in recs)
    t1 = max(r["end"] for r in recs)
    dur = t1 - t0
    ttft = [r["ttft"] for r in ok if "ttft" in r]
    e2e = [r["e2e"] for r in ok]
    delta = {
        k.removeprefix("vllm:").removesuffix("_total"): m1.get(k, 0.0) - m0.get(k, 0.0) for k in m1
    }
    queries = delta.get("prefix_cache_queries", 0.0)
    gpu = [s for s in (mon.samples if mon else []) if t0 <= s[0] <= t1]
    res = {
        "workload": kind,
        "concurrency": conc,
        "requests": len(recs),
        "ok": len(ok),
        "errors": sorted({r.get("error", "")[:160] for r in recs if not r.get("ok")})[:3],
        "client_procs": procs,
        "duration_s": round(dur, 2),
        "req_per_s": round(len(ok) / dur, 2),
        "out_tok_per_s": round(sum(r["completion_tokens"] for r in ok) / dur, 0),
        "prompt_tokens_mean": round(statistics.mean(r["prompt_tokens"] for r in ok), 0)
        if ok
        else None,
        "completion_tokens_mean": round(statistics.mean(r["completion_tokens"] for r in ok), 1)
        if ok
        else None,
        "ttft_ms_p50": _ms(pct(ttft, 50)),
        "ttft_ms_p95": _ms(pct(ttft, 95)),
        "ttft_ms_p99": _ms(pct(ttft, 99)),
        "e2e_s_p50": _s(pct(e2e, 50)),
        "e2e_s_p95": _s(pct(e2e, 95)),
        "prefix_cache_hit_rate": round(delta.get("prefix_cache_hits", 0.0) / queries, 4)
        if queries
        else None,
        "cache_reset": reset,
        "server_counters": delta,
        "gpu_util_mean": round(statistics.mean(s[1] for s in gpu), 1) if gpu else None,
        "gpu_mem_mib_max": max((s[2] for s in gpu), default=None),
    }
    return res


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000, 1)


def _s(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def kb_flags(model: str, served: str, port: int) -> list[str]:
    """`kb llm serve`'s flags for a GPU build (assistant/serving/serve.py, config.toml defaults)."""
    from assistant.serving.serve import vllm_command
    from core.config import LlmSettings

    llm = LlmSettings(served_name=served, port=port)
    cmd = vllm_command(llm, Path(model), host="127.0.0.1", port=port, cpu=False)
    return cmd[cmd.index(model) + 1 :]  # drop "python -m vllm... [serve|--model] DIR"


def start_server(
    a: argparse.Namespace, extra: list[str], log: Path, port: int
) -> tuple[Any, float]:
    """vLLM's CLI entry (`vllm serve`): --api-server-count > 1 needs it; kb's
    `python -m vllm.entrypoints.openai.api_server` always runs one API server process."""
    env = dict(
        os.environ,
        VLLM_SERVER_DEV_MODE="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        TOKENIZERS_PARALLELISM="false",
    )
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.cli.main",
        "serve",
        a.model,
        *kb_flags(a.model, a.served, port),
        *extra,
    ]
    t0 = time.time()
    with log.open("a") as f:
        f.write("=== " + shlex.join(cmd) + "\n")
        f.flush()
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    if a.pid_file:  # so a later call can stop a server this one left behind
        with open(a.pid_file, "a") as f:
            f.write(f"{proc.pid}\n")
    while True:
        time.sleep(1.0)
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited ({proc.returncode}); see {log}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
            return proc, time.time() - t0
        except OSError:
            pass
        if time.time() - t0 > a.start_timeout:
            stop_server(proc)
            raise RuntimeError(f"vLLM not ready in {a.start_timeout}s; see {log}")


def stop_server(proc: Any) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    time.sleep(2)


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


def run(a: argparse.Namespace) -> None:
    prompts = json.loads(Path(a.prompts).read_text())
    out_path = Path(a.out)
    results: dict[str, Any] = {"summary": prompts.get("summary"), "runs": [], "servers": []}
    if out_path.exists():
        results = json.loads(out_path.read_text())
    deadline = time.time() + a.budget_s
    ctx = mp.get_context("fork")
    with ctx.Pool(a.procs, initializer=_init_worker, initargs=(a.model,)) as pool:
        mon = GpuMonitor()  # after the fork: the client processes hold no thread
        mon.start()
        for variant in a.variant:
            name, _, flags = variant.partition("=")
            plan = parse_plan(a.plan if ":" not in name else name.split(":", 1)[1], prompts)
            name = name.split(":", 1)[0]
            if time.time() > deadline - 60:
                print(f"skip {name}: out of time", flush=True)
                continue
            log = out_path.parent / f"server_{name}.log"
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
                results["servers"].append({"variant": name, "flags": flags, "error": str(exc)})
                for proc in servers:
                    stop_server(proc)
                continue
            print(f"== {name} ({flags or 'kb flags'}) ready in {ready_s:.0f}s", flush=True)
            results["servers"].append(
                {
                    "variant": name,
                    "flags": flags,
                    "ready_s": round(ready_s, 1),
                    "replicas": a.replicas,
                    "kb_flags": shlex.join(kb_flags(a.model, a.served, a.port)),
                }
            )
            try:
                warm = [("rag", 16, 64)] if a.warmup else []
                for kind, conc, n in warm:
                    run_scenario(pool, a.procs, prompts, kind, conc, n, a, None)
                for kind, conc, n in plan:
                    if time.time() > deadline:
                        print(f"  skip {kind} c={conc}: out of time", flush=True)
                        continue
                    res = run_scenario(pool, a.procs, prompts, kind, conc, n, a, mon)
                    res["variant"] = name
                    res["flags"] = flags
                    res["replicas"] = a.replicas
                    results["runs"].append(res)
                    out_path.write_text(json.dumps(results, indent=1, ensure_ascii=False))
                    print(row(res), flush=True)
            finally:
                for proc in servers:
                    stop_server(proc)
    mon.stopped = True
    out_path.write_text(json.dumps(results, indent=1, ensure_ascii=False))


def row(r: dict[str, Any]) -> str:
    hit = r.get("prefix_cache_hit_rate")
    return (
        f"| {r['variant']} | {r['workload']} | {r['concurrency']} | {r['ok']}/{r['requests']}"
        f" | {r['prompt_tokens_mean']:.0f} | {r['req_per_s']:.1f} | {r['out_tok_per_s']:,.0f}"
        f" | {r['ttft_ms_p50']:.0f} / {r['ttft_ms_p95']:.0f} | {r['e2e_s_p50']:.2f} / "
        f"{r['e2e_s_p95']:.2f} | {'' if hit is None else f'{hit:.0%}'} | "
        f"{r['gpu_util_mean'] if r['gpu_util_mean'] is not None else ''} |"
    )


def table(a: argparse.Namespace) -> None:
    print(
        "| server | workload | concurrency | ok/sent | prompt tok | req/s | out tok/s | "
        "TTFT p50 / p95 ms | e2e p50 / p95 s | prefix-cache hits | GPU util % |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path in a.results:
        for r in json.loads(Path(path).read_text())["runs"]:
            print(row(r))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="kb retrieval + packing -> prompts.json")
    p.add_argument(
        "--tokenizer",
        type=Path,
        required=True,
        help="folder with the served model's tokenizer (and config.json)",
    )
    p.add_argument("--eval", type=Path, default=REPO.parent / "shared" / "eval")
    p.add_argument("--work", type=Path, default=Path("/tmp/kb-gpu-bench"))
    p.add_argument("--multi-tokens", type=int, default=1200)
    p.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run", help="start vLLM per variant and drive it")
    r.add_argument("--prompts", required=True)
    r.add_argument("--model", required=True, help="model folder vLLM serves")
    r.add_argument("--served", default="ernie-4.5-0.3b")
    r.add_argument("--port", type=int, default=8000)
    r.add_argument("--out", required=True)
    r.add_argument(
        "--variant",
        action="append",
        required=True,
        help="NAME=EXTRA FLAGS (NAME:PLAN=... gives that variant its own plan)",
    )
    r.add_argument("--plan", default="rag:1,rag:16,rag:64,rag:256")
    r.add_argument("--procs", type=int, default=8, help="client processes")
    r.add_argument("--temperature", type=float, default=0.1)
    r.add_argument("--budget-s", type=float, default=480.0, help="stop starting runs after")
    r.add_argument("--start-timeout", type=float, default=240.0)
    r.add_argument("--no-warmup", dest="warmup", action="store_false")
    r.add_argument(
        "--no-start",
        action="store_true",
        help="drive the server already at --port (the variant only names it)",
    )
    r.add_argument("--pid-file", default="", help="write each server's process id here")
    r.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="vLLM servers on the one GPU (ports --port, --port+1, ...), each with its share "
        "of the memory, driven through kb's ReplicaPool",
    )
    t = sub.add_parser("table", help="Markdown table of results files")
    t.add_argument("results", nargs="+")
    a = ap.parse_args()
    if a.cmd == "prepare":
        a.work.mkdir(parents=True, exist_ok=True)
        prepare(a)
    elif a.cmd == "run":
        a.bases = [f"http://127.0.0.1:{a.port + i}" for i in range(a.replicas)]
        run(a)
    else:
        table(a)


if __name__ == "__main__":
    main()
