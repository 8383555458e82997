"""`python -m bench`: the CPU benchmarks, each with its baseline measured in the same run.

    python -m bench all              # every benchmark below marked for `all`, quick mode
    python -m bench query cold       # some of them
    python -m bench all --full       # the full runs (BENCHMARKS.md's figures)
    python -m bench list
    python -m bench report [--check] # BENCHMARKS.md from the recorded reports (bench/report/)

Each benchmark is a module in a room of bench/ (bench/__init__.py maps them) that prints one JSON
report (its last output line or block); it runs in its own process (`python -m bench.ROOM.MODULE
ARGS` from the repository root), one after another (a 2-core machine: never two at once).
This prints each report's ratios (every key with "ratio" or "speedup" in its name), the time it
took and the host it ran on (CPU, cores, the share of CPU time the hypervisor took meanwhile,
load: timings compare only on one host), and writes the reports to --out (default
bench/results/latest.json).

Registering a benchmark is one line in BENCHES: name -> Bench(module, full args, quick args,
in_all, what). The quick args must keep `all` within ~20 minutes on the 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Host

REPO = Path(__file__).resolve().parents[1]

PUBLIC_DOCS = str(REPO.parent / "shared" / "eval" / "public" / "docs")
SAMPLE_DOCS = str(REPO / "data" / "samples" / "docs")


@dataclass(frozen=True)
class Bench:
    module: str  # "ROOM.MODULE": bench/ROOM/MODULE.py, run as `python -m bench.ROOM.MODULE`
    full: str  # arguments of the full run
    quick: str  # arguments of the quick run
    in_all: bool  # run by `python -m bench all`
    what: str


BENCHES: dict[str, Bench] = {
    "query": Bench("query.retrieve_latency", "--chunks 100000", "--chunks 100000 --quick", True,
                   "retrieve + pack p95 at 100k chunks, access control on; vs Chroma's where"),
    "query-1m": Bench("query.retrieve_latency", "--chunks 1000000", "--chunks 1000000 --quick",
                      False, "the same at 1M chunks (builds /tmp/kb-bench-1m once: hours)"),
    "cold": Bench("query.cold_start", "--rounds 5", "--quick", True,
                  "`kb ask` from a cold start, retrieval-only; vs main before issue 12"),
    # each question after 0.5 s, as an asker after the last answer: without it, the server is
    # still writing the answer the bench stopped at its first token, beside the next question
    "overhead": Bench("query.overhead", "--pause 0.5", "--quick --pause 0.5", True,
                      "pipeline time before the request vs time to first token (vLLM CPU)"),
    "followup": Bench("query.followup_latency", "--rounds 5", "--rounds 2", True,
                      "retrieval of follow-ups read with their history vs alone (p95 added)"),
    "crosslang": Bench("query.crosslang", "--rounds 3", "--rounds 1", False,
                       "the multilingual space: ingest cost, p95 added, where its gate opens"),
    "bilingual": Bench("query.bilingual_latency", "--rounds 3", "--rounds 1", False,
                       "the lexical bridge to the other language: p95 added, bridge on vs off"),
    "library": Bench("quality.library", "", "--sets public", False,
                     "the shared sets in their own stores and in one store of public + public2"),
    "library-scale": Bench("query.library_scale", "--steps 0,1000,3000,10000", "--steps 0,1000",
                           False, "window recall and retrieve + pack p95 to 10,000 documents"),
    "audit": Bench("query.audit_latency", "--rounds 25", "--rounds 5", True,
                   "a question's p95 with the audit events that follow it vs without"),
    "sync": Bench("ingest.sync_unchanged", "--files 10000 --passes 5",
                  "--files 10000 --passes 3", True,
                  "a sync pass over 10,000 unchanged files vs `kb ingest` over the same"),
    "ingest": Bench("ingest.ingest_speed", PUBLIC_DOCS, SAMPLE_DOCS, True,
                    "fresh ingest pages/s vs the LlamaIndex starter; unchanged re-index"),
    "parse": Bench("ingest.parse_speed", f"{PUBLIC_DOCS} --repeat 5", f"{SAMPLE_DOCS} --repeat 1",
                   True, "PDF parse pages/s, tables off vs on"),
    # by name only (minutes each, or a model server of their own)
    "levers": Bench("ingest.ingest_levers", PUBLIC_DOCS, SAMPLE_DOCS, False,
                    "ingest with torch vs OpenVINO vs the starter; embedding alone, sorted"),
    "reindex": Bench("ingest.reindex_speed", "--files 100 --cli", "--files 100", False,
                     "re-index of 100 generated files, unchanged and 1% changed, vs fresh "
                     "(full: also as `kb` commands)"),
    "workers": Bench("ingest.ingest_workers", PUBLIC_DOCS, SAMPLE_DOCS, False,
                     "ingest with 1 worker, --workers 2 and 2 queue workers"),
    "load": Bench("load.askers", "", "--askers 8", False,
                  "50 askers through the page and the API (vLLM CPU test server) vs one alone"),
    "openai": Bench("serving.openai_overhead", "--rounds 300", "--rounds 100", False,
                    "the OpenAI-compatible endpoint vs POST /api/ask, same questions in turn "
                    "(retrieval-only)"),
    "mcp": Bench("serving.mcp_overhead", "--rounds 1000", "--rounds 100", False,
                 "the MCP server's ask tool (official client, both revisions) vs POST /api/ask, "
                 "same questions in turn (retrieval-only)"),
    "login-flood": Bench("load.login_flood", "--runs 10", "--runs 3", False,
                         "40 parallel wrong sign-ins: the slowest page request of each run"),
    "body-flood": Bench("load.body_flood", "--runs 3", "--runs 1", False,
                        "large bodies to /v1/chat/completions: another user's slowest request"),
    "retention": Bench("serving.retention_pass", "--questions 1000000",
                       "--questions 20000 --quiet-s 10", False,
                       "POST /api/ask p95 while a retention pass runs over 1M logged questions "
                       "vs no pass"),
    "channels-ack": Bench("load.channels_ack", "--rounds 3", "--rounds 1", False,
                          "signed chat callbacks of five platforms, 20 at once: the slowest "
                          "acknowledgement"),
    "refresh": Bench("serving.refresh_delay", "--rounds 5", "--rounds 2", False,
                     "snapshot refresh delay across three app processes"),
    "gpu-ingest": Bench("ingest.gpu_ingest", f"{PUBLIC_DOCS} --workers 1,8",
                        f"{SAMPLE_DOCS} --workers 1", False,
                        "ingest with the embedder on the GPU vs its CPU (GPU machine)"),
    "ingest-generated": Bench("ingest.ingest_speed", "--generated --repeat 2", "--generated", False,
                              "fresh ingest vs the starter on the generated ~594-page corpus"),
    "ldap": Bench("serving.ldap_signin", "--rounds 200", "--rounds 30", False,
                  "LDAP sign-in through the login check vs a real slapd on loopback (needs "
                  "scripts/install_ldap.sh)"),
    "approved": Bench("quality.approved_match", "--rounds 5", "--rounds 2", False,
                      "approved answers: paraphrase and typo hits, false matches over both "
                      "public sets; match p95 against 1,000 approved answers"),
    "waves": Bench("ingest.embed_waves", PUBLIC_DOCS, SAMPLE_DOCS, False,
                   "embedding alone: per document vs waves vs waves on throughput streams"),
}


def last_json(text: str) -> Any:
    """The last JSON value printed: a whole last line, else the last block starting at '{'."""
    lines = text.strip().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(("{", "[")):
            try:
                return json.loads("\n".join(lines[i:]))
            except json.JSONDecodeError:
                continue
    return None


def ratios(report: Any, prefix: str = "") -> dict[str, Any]:
    """Every value whose key names a ratio or a speed-up, with its path."""
    found: dict[str, Any] = {}
    if isinstance(report, dict):
        for key, value in report.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict | list):
                found.update(ratios(value, path))
            elif "ratio" in str(key) or "speedup" in str(key):
                found[path] = value
    elif isinstance(report, list):
        for i, value in enumerate(report):
            found.update(ratios(value, f"{prefix}[{i}]"))
    return found


def run(name: str, bench: Bench, full: bool) -> dict[str, Any]:
    args = shlex.split(bench.full if full else bench.quick)
    return run_command(name, ["python", "-m", f"bench.{bench.module}", *args])


def run_command(name: str, command: list[str]) -> dict[str, Any]:
    """Run `command` (as a user would type it: "python" stands for this interpreter) in its own
    process, print its ratios, and return its result with its JSON report."""
    print(f"== {name}: {' '.join(command)}", flush=True)
    started, host = time.perf_counter(), Host()
    done = subprocess.run([sys.executable, *command[1:]], cwd=REPO, capture_output=True,
                          text=True, check=False)
    seconds = time.perf_counter() - started
    report = last_json(done.stdout)
    result = {"bench": name, "command": " ".join(command), "seconds": round(seconds, 1),
              "date": time.strftime("%Y-%m-%d", time.gmtime()),  # UTC, for BENCHMARKS.md
              "returncode": done.returncode, "host": host.report(), "report": report}
    if report is None:  # nothing to show: say why, with the end of its stderr
        result["error"] = done.stderr[-3000:]
        why = f"exit {done.returncode}" if done.returncode else "exit 0 but no JSON report"
        print(f"   failed ({why}):\n{done.stderr[-1500:]}", flush=True)
        return result
    for path, value in ratios(report).items():
        print(f"   {path}: {value}", flush=True)
    if done.returncode != 0:  # a report, and a goal not met (bench/load/askers.py: errors)
        result["error"] = done.stderr[-3000:]
        print(f"   failed (exit {done.returncode}), report kept:\n{done.stderr[-1500:]}",
              flush=True)
    machine = result["host"]
    print(f"   ({seconds:.0f} s on {machine['cpu']}, {machine['cores']} cores, "
          f"stolen {machine['steal_share']}, load {machine['load_average']})", flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["report"]:  # not a benchmark: the page drawn from the recorded reports
        from bench.report.render import main as report

        return report(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=["all"],
                        help="all, list, report, or bench names")
    parser.add_argument("--full", action="store_true", help="the full runs, not the quick ones")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "latest.json")
    args = parser.parse_args(argv)
    if args.names == ["list"]:
        for name, bench in BENCHES.items():
            print(f"{name:<10} {'all ' if bench.in_all else '    '} {bench.what}")
        return 0
    names = [n for n in BENCHES if BENCHES[n].in_all] if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}: see `python -m bench list`")
    results = [run(name, BENCHES[name], args.full) for name in names]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"reports written to {args.out}")
    return 0 if all(r["returncode"] == 0 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
