"""`python -m bench.serving.gpu_serve prepare|run|table`: the commands' arguments
(bench/serving/gpu_serve/__init__.py says what each does). A command's module is imported only when
it runs: `run` and `table` go to a GPU machine that has vLLM but not kb's ingest stack, which
`prepare` needs."""

from __future__ import annotations

import argparse
from pathlib import Path

import bench.serving.gpu_serve

REPO = Path(__file__).resolve().parents[3]


def main(argv: list[str] | None = None) -> None:
    a = parser().parse_args(argv)
    if a.cmd == "prepare":
        from bench.serving.gpu_serve.prepare import prepare

        prepare(a)
    elif a.cmd == "run":
        from bench.serving.gpu_serve.run import run

        a.bases = [f"http://127.0.0.1:{a.port + i}" for i in range(a.replicas)]
        run(a)
    else:
        from bench.serving.gpu_serve.table import table

        table(a)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m bench.serving.gpu_serve",
        description=(bench.serving.gpu_serve.__doc__ or "").split("\n")[0],
    )
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
    add_run_arguments(sub.add_parser("run", help="start vLLM per variant and drive it"))
    t = sub.add_parser("table", help="Markdown table of results files")
    t.add_argument("results", nargs="+")
    return ap


def add_run_arguments(r: argparse.ArgumentParser) -> None:
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


if __name__ == "__main__":
    main()
