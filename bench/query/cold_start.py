"""`kb ask` from a cold start: a new process answering one question over the sample store, in
retrieval-only mode (the model server's address refuses connections), as the command runs.

Each round runs, in fresh processes: `kb ask QUESTION` whole (wall clock), and a staged copy
of it that times importing the CLI, opening the services (ledger, Chroma, assistant), the
first retrieval (snapshot, question embedding, search) and the answer. The baseline in the same
run is the code at --base (main before issue 12 unless named), unpacked from git into a
temporary folder, over its own store where its embedders differ (--base-store).

    .venv/bin/python -m bench.query.cold_start --rounds 5
    .venv/bin/python -m bench.query.cold_start --quick          # 2 rounds
    .venv/bin/python -m bench.query.cold_start --base main --store /tmp/kb-bench-samples-e5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from bench.common import SAMPLE_STORE, ensure_sample_store
from devtools.ports import free_port

REPO = Path(__file__).resolve().parents[2]

BASE = "f8eabf3"  # main when issue 12's query work began
QUESTION = "How many days of annual leave can I carry over?"

STAGED = """
import time
t0 = time.perf_counter()
try:
    from ui.cli.common import offline_environment, settings_for
except ImportError:  # the baseline, before the house of issue 24
    from ui.cli_common import offline_environment, settings_for
from ui.cli import main
t1 = time.perf_counter()
offline_environment()
from ui.wiring import open_services
settings = settings_for("config.toml", {store!r})
services = open_services(settings)
t2 = time.perf_counter()
services.assistant.retriever.retrieve({question!r}, ["all"])
t3 = time.perf_counter()
answer = services.assistant.ask({question!r} + " ", ["all"])
t4 = time.perf_counter()
services.close()
import json, sys
print(json.dumps({{"import": t1 - t0, "open": t2 - t1, "first_retrieve": t3 - t2,
                  "answer": t4 - t3, "mode": answer.mode,
                  "torch_loaded": "torch" in sys.modules,
                  "chromadb_loaded": "chromadb" in sys.modules,
                  "openvino_loaded": "openvino" in sys.modules}}))
"""


def unpack(ref: str) -> Path:
    """The tree of `ref` in a temporary folder."""
    out = Path(tempfile.mkdtemp(prefix=f"kb-{ref}-"))
    data = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(out, filter="data")
    return out


def run(tree: Path, env: dict[str, str], args: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args], cwd=tree, env={**env, "PYTHONPATH": str(tree)},
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{args[:3]} in {tree} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - started, done.stdout


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 rounds")
    parser.add_argument("--base", default=BASE, help="the git ref measured as the baseline")
    parser.add_argument("--question", default=QUESTION, help="the question asked")
    parser.add_argument("--store", type=Path, default=SAMPLE_STORE,
                        help="the sample store (made once with config.toml's embedders)")
    parser.add_argument("--base-store", type=Path, default=SAMPLE_STORE,
                        help="the baseline's sample store, made with its embedders")
    args = parser.parse_args(argv)
    rounds = 2 if args.quick else args.rounds
    port = free_port()
    trees = {"kb": (REPO, args.store), "baseline": (unpack(args.base), args.base_store)}
    envs = {}
    for name, (_, store) in trees.items():
        settings = ensure_sample_store(store)
        envs[name] = {
            **os.environ,
            "KB_LLM_URL": f"http://127.0.0.1:{port}/v1",  # nobody listens: retrieval-only
            "KB_EMBED_CACHE": str(settings.embed.cache),
        }
    walls: dict[str, list[float]] = {name: [] for name in trees}
    stages: dict[str, list[dict[str, object]]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, (tree, store) in trees.items():  # interleaved: both see the same load
            ask = ["-c", "from ui.cli import main; main()", "ask", args.question,
                   "--store", str(store)]
            staged = ["-c", STAGED.format(store=str(store), question=args.question)]
            walls[name].append(run(tree, envs[name], ask)[0])
            staged_out = run(tree, envs[name], staged)[1]
            stages[name].append(json.loads(staged_out.strip().splitlines()[-1]))
    base = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.base],
                          check=True, capture_output=True, text=True).stdout.strip()
    report: dict[str, object] = {"rounds": rounds, "base": base, "question": args.question,
                                 "stores": {n: str(s) for n, (_, s) in trees.items()}}
    for name in trees:
        report[name] = {
            "kb_ask_wall_s_median": round(statistics.median(walls[name]), 2),
            "kb_ask_wall_s_all": [round(w, 2) for w in walls[name]],
            "stages_s_median": {
                key: round(statistics.median(float(s[key]) for s in stages[name]), 3)  # type: ignore[arg-type]
                for key in ("import", "open", "first_retrieve", "answer")
            },
            "mode": stages[name][-1]["mode"],
            "torch_loaded": stages[name][-1]["torch_loaded"],
            "chromadb_loaded": stages[name][-1].get("chromadb_loaded"),
            "openvino_loaded": stages[name][-1].get("openvino_loaded"),
        }
    kb, base = report["kb"], report["baseline"]
    report["ratio_baseline_to_kb"] = round(
        base["kb_ask_wall_s_median"] / kb["kb_ask_wall_s_median"], 2  # type: ignore[index]
    )
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
