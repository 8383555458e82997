"""The recorded reports BENCHMARKS.md is drawn from, and how a run is named on it.

SOURCES names, for each table of the page and of its detail in docs/benchmarks-history.md, the
report files it reads: `kb eval --json` reports (bench/eval_*.json, also the gate values of
tests/assistant/test_eval.py), the answerability model's note (its held-out checks), and JSON
reports under bench/results/. What a report does not record itself (the date of runs before the
runner recorded one, the command or machine of scripts that record neither) is given beside its
files.

Recording a new headline run: save its report under bench/results/ (`python -m bench NAME
--out bench/results/NAME.json` records the host and the date), point its Source here at it, run
`python -m bench report` and commit both.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HISTORY = "docs/benchmarks-history.md"
RESULTS = "bench/results/"


@dataclass(frozen=True)
class Source:
    """The report files of one table, and what they do not record themselves."""

    paths: tuple[str, ...]  # from the repository root
    bench: str = ""  # the entry to read in a `python -m bench` report (a list of entries)
    date: str = ""  # UTC day of the run, where the report records none
    command: str = ""  # how it ran, where the report records none
    machine: str = ""  # where it ran, where the report records no host


def _seventh(kind: str, runs: list[str]) -> tuple[str, ...]:
    return tuple(f"{RESULTS}issue12-seventh-pass-{kind}-{run}.json" for run in runs)


QUALITY = "any machine (quality does not depend on it)"
H200 = "one lent NVIDIA H200, 16 CPU cores, vLLM 0.26.0"
OTHER_H200 = "another lent H200 of the same kind, vLLM 0.26.0"
CHOSEN_FLAGS = "--api-server-count 4 --max-num-batched-tokens 16384 --stream-interval 8"
GPU_RUN = "python -m bench.serving.gpu_serve run … --variant 'NAME:rag:USERS:REQUESTS,…=FLAGS'"

SOURCES: dict[str, Source] = {
    "public": Source(("bench/eval_public.json",), machine=QUALITY),
    "public2": Source(("bench/eval_public2.json",), machine=QUALITY),
    "followup": Source(("bench/eval_followup.json",), machine=QUALITY),
    "followup_latency": Source((f"{RESULTS}issue25-followup-latency.json",), bench="followup"),
    "ldap_signin": Source((f"{RESULTS}issue26-ldap-signin.json",), bench="ldap"),
    # approved answers (issue 27): hits and false matches on both public sets (quality does not
    # depend on the machine), and the match p95 against 1,000 approved answers (it does)
    "approved": Source((f"{RESULTS}issue27-approved.json",), bench="approved"),
    # its command and held-out checks are in the model's note
    "abstain": Source(("assistant/data/answerable.json",), date="2026-12-01", machine=QUALITY),
    # as config.toml ships (the crosslang space on multilingual-e5-small)
    "ingest": Source((f"{RESULTS}quiet-ingest-2026-12-06.json",), bench="ingest"),
    "generated": Source((f"{RESULTS}issue12-seventh-pass-bench-ingest-generated.json",),
                        bench="ingest-generated", date="2026-12-02"),
    "reindex": Source((f"{RESULTS}issue12-eighth-pass-bench-reindex.json",), bench="reindex",
                      date="2026-12-02"),
    # these reports name their GPU and CPU cores
    "gpu_ingest": Source(
        tuple(f"{RESULTS}gpu-2026-12-01-ingest-corpus-w{n}.json" for n in (1, 8)),
        date="2026-12-01",
        command="DOCS=/tmp/docs2 WORKERS=1 (then 8) bash bench/ingest/gpu_ingest_step.sh 2"),
    "query": Source((f"{RESULTS}issue12-seventh-pass-bench-reindex-query.json",), bench="query",
                    date="2026-12-02"),
    # the five runs on the built store (the run right after the build held the build's memory)
    "query_1m": Source(_seventh("1m", ["1", "2", "3", "4", "5"]), date="2026-12-01",
                       command="python -m bench.query.retrieve_latency --chunks 1000000 --no-build "
                       "--no-where --questions-openvino"),
    # the shipped configuration (the space on multilingual-e5-small) against main before it,
    # each over a sample store of its own embedders
    "cold": Source((f"{RESULTS}quiet-cold-ask-2026-12-06-third.json",), date="2026-12-06",
                   command="python -m bench.query.cold_start --rounds 5 "
                           "--store /tmp/kb-bench-samples-e5 --base-store /tmp/kb-bench-samples",
                   machine="AMD EPYC, 2 cores, quiet (load average 0.9)"),
    "overhead": Source(_seventh("overhead", [str(n) for n in range(1, 9)]), date="2026-12-01",
                       command="python -m bench.query.overhead --quick --pause 0.5"),
    "gpu": Source(tuple(f"{RESULTS}gpu-2026-11-30-s2-{run}.json"
                        for run in ("levels", "one", "rep", "procs8")),
                  date="2026-11-30", command=GPU_RUN, machine=H200),
    # issue 28: three runs of 50 askers x 2 questions, the page's askers waiting as a browser does
    "load": Source(tuple(f"{RESULTS}issue28-load-{n}.json" for n in (1, 2, 3)), bench="load",
                   date="2026-12-03"),
    # issue 25: the OpenAI-compatible endpoint against POST /api/ask, three runs of 300 rounds
    "openai": Source(tuple(f"{RESULTS}issue25-openai-overhead-{n}.json" for n in (1, 2, 3)),
                     bench="openai"),
    # issue 41: the MCP server's ask tool against POST /api/ask and /v1, three runs of 1000 rounds
    "mcp": Source(tuple(f"{RESULTS}quiet-mcp-overhead-{n}.json" for n in (1, 2, 3)),
                  bench="mcp"),
    # issue 26: the audit trail's cost to a question; 40 wrong sign-ins at once, 10 runs, now
    # and with the code before it (ac51a22), their floods taking turns
    "audit": Source((f"{RESULTS}issue26-audit-latency.json",), bench="audit"),
    "login_flood": Source((f"{RESULTS}issue26-login-flood.json",), date="2026-12-03",
                          command="python -m bench.load.login_flood --runs 10 --before "
                                  "/tmp/before (git archive ac51a22)"),
    # issue 36: large API bodies against kb serve, now and with the code before it (827761c)
    "body_flood": Source((f"{RESULTS}issue36-body-flood.json",), date="2026-12-06",
                         command="python -m bench.load.body_flood --runs 3 --before "
                                 "/tmp/before (git archive 827761c)"),
    # issue 43: POST /api/ask while a retention pass masks, then deletes, a million questions
    "retention": Source((f"{RESULTS}issue43-retention-pass.json",),
                        command="python -m bench.serving.retention_pass --questions 1000000"),
    # issue 42: a chat platform's callbacks acknowledged while 20 arrive at once
    "channels_ack": Source((f"{RESULTS}issue42-channels-ack.json",)),
    # issue 27: a sync pass over 10,000 unchanged files (ledger rows seeded), beside `kb ingest`
    "sync_unchanged": Source((f"{RESULTS}issue27-sync-unchanged.json",), bench="sync"),
    # issue 29: crosslang by direction (quality does not depend on the machine); what the
    # cross-language side costs; a perfect translation; the space as evidence for refusing
    "crosslang": Source(("bench/eval_crosslang.json",), machine=QUALITY),
    "crosslang_cost": Source((f"{RESULTS}quiet-crosslang-2026-12-06-third.json",),
                             bench="crosslang"),
    "crosslang_translate": Source((f"{RESULTS}issue29-crosslang-translate.json",),
                                  date="2026-12-03"),
    "crosslang_abstain": Source((f"{RESULTS}issue29-crosslang-abstain.json",),
                                date="2026-12-03"),
    # issues 38-39: the other language's best passages kept whatever the gate, own and shared
    # store, beside the gate alone
    "crosslang_reserve": Source((f"{RESULTS}crosslang-reserve-2026-12-06.json",)),
    # issue 39: the shared sets' library part is in their eval records (above); the library
    # store grown by generated distractors
    "library_scale": Source((f"{RESULTS}quiet-library-scale-2026-12-06-third.json",)),
    "library_losses": Source((f"{RESULTS}issue39-library.json",)),
    # the first session, on another lent H200: kb's flags alone (call 3), the chosen ones (4-6)
    "gpu_first": Source(tuple(f"{RESULTS}gpu-2026-11-30-call{n}.json" for n in (3, 4, 5, 6)),
                        date="2026-11-30", command=GPU_RUN, machine=OTHER_H200),
}


class Recorded:
    """The reports of SOURCES as one checkout holds them."""

    def __init__(self, root: Path = REPO, sources: dict[str, Source] = SOURCES) -> None:
        self.root, self.sources = root, sources

    def reports(self, name: str) -> list[Any]:
        """The reports of one source; for a `python -m bench` report, its entry that ran."""
        source = self.sources[name]
        found = []
        for path in source.paths:
            data = json.loads((self.root / path).read_text("utf-8"))
            if source.bench:
                entries = [e for e in data if e["bench"] == source.bench and e["returncode"] == 0]
                if not entries:
                    raise ValueError(f"{path}: no {source.bench!r} entry that ran")
                data = entries[0]
            found.append(data)
        return found

    def report(self, name: str) -> Any:
        """The one report of a source (its inner report for a `python -m bench` entry)."""
        (data,) = self.reports(name)
        return data["report"] if self.sources[name].bench else data

    def run_line(self, name: str, command: str = "") -> str:
        """`command` · machine · date · report files, for the line under a table: the
        command given, else the one the reports record, else their source's."""
        source, reports = self.sources[name], self.reports(name)
        recorded = sorted({shown(r["command"]) for r in reports if "command" in r})
        command = f"`{command}`" if command else " / ".join(f"`{c}`" for c in recorded)
        command = command or f"`{source.command}`"
        dates = sorted({r["date"] for r in reports if "date" in r}) or [source.date]
        if not dates[0]:
            raise ValueError(f"{name}: neither the reports nor the source give a date")
        files = link(files_named(source.paths), source.paths[0] if len(source.paths) == 1
                     else Path(source.paths[0]).parent.as_posix() + "/")
        return f"{command} · {machine(reports, source.machine)} · {', '.join(dates)} · {files}"


# When bench/ was given rooms, its load.py became bench/load/askers.py; the other benchmarks
# kept their names, so a recorded bench/NAME.py is found as bench/ROOM/NAME.py
RENAMED = {"load": "bench.load.askers"}


def shown(command: str) -> str:
    """A recorded command as it is typed today in the repository root: the checkout's paths
    made relative, a benchmark run as the module it is now.

    shown("/work/main/bench/cold_start.py --rounds 5")
        -> "python -m bench.query.cold_start --rounds 5"
    shown("/work/main/bench/load.py") -> "python -m bench.load.askers"
    """
    words = command.split()
    if words[:2] == ["python", "-m"] and words[2].startswith("bench."):
        words = [words[2].replace(".", "/") + ".py", *words[3:]]
    shown_words = []
    for word in words:
        if word.startswith("/") and "/shared/" in word:
            word = "../shared/" + word.split("/shared/", 1)[1]
        elif word.endswith(".py") and (word.startswith("bench/") or "/bench/" in word):
            word = "python -m " + module(word.rsplit("bench/", 1)[1])
        shown_words.append(word)
    return " ".join(shown_words)


def module(path: str) -> str:
    """The module a benchmark's script path names today, from bench/.

    module("query/cold_start.py") -> "bench.query.cold_start"
    module("cold_start.py") -> "bench.query.cold_start"
    """
    name = path.removesuffix(".py")
    if (REPO / "bench" / path).is_file():
        return "bench." + name.replace("/", ".")
    if name in RENAMED:
        return RENAMED[name]
    found = [p for p in sorted((REPO / "bench").glob(f"*/{path}")) if p.parent.name != "report"]
    if len(found) != 1:
        raise ValueError(f"no benchmark bench/ROOM/{path} for a recorded command")
    return "bench." + found[0].relative_to(REPO / "bench").with_suffix("").as_posix().replace(
        "/", ".")


def machine(reports: list[Any], declared: str) -> str:
    """The hosts the reports recorded (`python -m bench` entries and newer scripts), else the
    machine their source declares.

    machine([{"host": {"cpu": "AMD EPYC", "cores": 2, "steal_share": 0.0004}}], "")
        -> "AMD EPYC, 2 cores, 0.04% of CPU time stolen"
    """
    hosts = [r.get("host") or r.get("report", {}).get("host") for r in reports]
    hosts = [h for h in hosts if h]
    gpus = sorted({f"{r['gpu']}, {r['cpus']} CPU cores, torch {r['torch']}"
                   for r in reports if "gpu" in r})
    if not hosts:
        if not (gpus or declared):
            raise ValueError("a report without its host needs the machine in its Source")
        return "; ".join(gpus) or declared
    kinds = sorted({f"{h['cpu']}, {h['cores']} cores" for h in hosts})
    stolen = [h["steal_share"] for h in hosts if h.get("steal_share") is not None]
    text = "; ".join(kinds)
    if stolen:
        text += f", {span(stolen, '{:.2%}')} of CPU time stolen"
    if len(hosts) < len(reports):
        text += f" (host recorded in {len(hosts)} of {len(reports)} reports)"
    return text


def files_named(paths: tuple[str, ...]) -> str:
    """Several report files as one name, the parts that differ in braces.

    files_named(("r/a-1.json", "r/a-2.json")) -> "r/a-{1,2}.json"
    """
    if len(paths) == 1:
        return paths[0]
    head = os.path.commonprefix(paths)
    tail = os.path.commonprefix([p[len(head):][::-1] for p in paths])[::-1]
    middles = [p[len(head) : len(p) - len(tail)] for p in paths]
    return f"{head}{{{','.join(middles)}}}{tail}"


def link(name: str, target: str) -> str:
    return f"[`{name.removeprefix(RESULTS)}`]({target})"


def anchor(title: str) -> str:
    """GitHub's anchor for a heading.

    anchor("Goal 4: `bench/query/overhead.py`") -> "goal-4-benchqueryoverheadpy"
    """
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def span(values: list[float], fmt: str = "{}") -> str:
    """The range of some figures: "a–b", or "a" when they are all equal.

    span([0.3, 0.1, 0.2], "{:.1f}") -> "0.1–0.3"
    """
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return low if low == high else f"{low}–{high}"


def times(value: float) -> str:
    """A ratio as the page writes it: 1.25×, 7.9×, 37.4×, 1,058×."""
    return f"{value:,.0f}×" if value >= 100 else f"{value:.3g}×"
