"""The sections of BENCHMARKS.md, each drawn from the recorded reports (bench/recorded.py).

Each section is a function of a `Recorded` that returns its lines (bench/report.py puts them in
order, with the goals of bench/report_goals.py). The figures, ranges and ratios come from the
reports; the words around them are fixed here. The load figures are the one exception, and the
page says so.
"""

from __future__ import annotations

import json
import re
import statistics
import textwrap
from typing import Any

from bench.recorded import CHOSEN_FLAGS, HISTORY, Recorded, span, times

LANGS = ("en", "zh")
SETS = ("public", "public2")
FLAGS_COMPARED_AT = (64, 256)  # the concurrencies the history compares vLLM's flags at


def para(text: str) -> list[str]:
    """A paragraph wrapped at 100 columns, then a blank line."""
    return [*textwrap.wrap(text, 100, break_long_words=False, break_on_hyphens=False), ""]


def bullet(text: str) -> list[str]:
    """A list item wrapped at 100 columns."""
    return textwrap.wrap(text, 100, initial_indent="- ", subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False)


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [f"| {' | '.join(header)} |", "|" + " --- |" * len(header),
            *(f"| {' | '.join(row)} |" for row in rows), ""]


def fraction(text: str) -> tuple[int, int]:
    """The first "a/b" of a text.

    fraction("refused 0/42, answered 7/8") -> (0, 42)
    """
    found = re.search(r"(\d+)/(\d+)", text)
    if found is None:
        raise ValueError(f"no a/b in {text!r}")
    return int(found[1]), int(found[2])


def questions(counts: str) -> tuple[int, int]:
    """(answerable, unanswerable) questions from `kb eval`'s abstention counts.

    questions("refused 0/42, answered 7/8") -> (42, 8)
    """
    refused, answered = counts.split(",")
    return fraction(refused)[1], fraction(answered)[1]


def held_out(rec: Recorded) -> tuple[str, dict[str, Any]]:
    """The fit command and its held-out checks, as the shipped answerability model notes them."""
    command, _, checks = rec.report("abstain")["note"].partition("; held-out checks: ")
    return command, json.loads(checks)


def head(rec: Recorded) -> list[str]:
    public, public2 = (questions(rec.report(s)["ours"]["en"]["counts"]) for s in SETS)
    history = f"[{HISTORY}]({HISTORY})"
    return [
        "# Benchmarks", "",
        *para("What kb-assistant measures today: each table with the command, machine and date "
              "of its run and, where one ran beside it, a baseline of the same run as a ratio "
              "(above 1×: kb-assistant is faster); timings compare only on one host. `python -m "
              "bench report` writes this page from the reports `bench/recorded.py` names, and CI "
              f"fails when it differs from them. How each figure was reached: {history}."),
        "## What is measured", "",
        *bullet(f"**Quality**: `kb eval` on the dev sets `public` ({public[0]} answerable, "
                f"{public[1]} unanswerable questions per language) and `public2` ({public2[0]}, "
                f"{public2[1]}): the passage holding the gold quote ranked first (hit@1) or in "
                "the top 5, MRR@10, that passage packed into the prompt (in-window recall), and "
                "refusing exactly the unanswerable questions (abstention accuracy)."),
        *bullet("**Follow-ups**: the same on `followup` (questions that lean on the turns before "
                "them), each follow-up searched for as read with its history and, as the "
                "control, alone; the time that reading adds to retrieval."),
        *bullet("**Ingest**: pages/s of a fresh ingest against the LlamaIndex starter with the "
                "same embedder; a re-index with one of 100 files changed against a fresh ingest."),
        *bullet("**Query latency**: retrieve + pack with access control at 100,000 and "
                "1,000,000 chunks; `kb ask` from a cold start; the pipeline's time before the "
                "model request, as a share of the time to the first token."),
        *bullet("**GPU serving**: RAG answers/s and time to first token (TTFT) through kb's own "
                "client on one H200."),
        *bullet("**Load**: many employees asking at once through the page and the API."),
        *bullet("**API overhead**: the OpenAI-compatible endpoint against `POST /api/ask`, the "
                "same questions in turn."), "",
    ]


def quality(rec: Recorded) -> list[str]:
    rows = []
    for name in SETS:
        report = rec.report(name)
        for lang in LANGS:
            ours, starter = report["ours"][lang], report["llamaindex_starter"][lang]
            counts = ours["counts"].replace("refused ", "").replace("answered ", "")
            rows.append([f"{name} · {lang}", *(f"{ours[m]:.3f}" for m in
                         ("hit@1", "hit@5", "mrr@10", "in_window", "abstain_acc")),
                         counts, f"{starter['hit@1']:.3f} / {starter['hit@5']:.3f}"])
    header = ["set · lang", "hit@1", "hit@5", "MRR@10", "in-window", "abstention (in-sample)",
              "answerable refused, unanswerable answered", "LlamaIndex starter hit@1 / hit@5"]
    command, checks = held_out(rec)
    held = []
    for lang in LANGS:
        fold, other = checks[lang]["two_fold"], checks[lang]["other_sets"]
        answerable, unanswerable = fraction(fold["refused"])[1], fraction(fold["answered"])[1]
        never = answerable / (answerable + unanswerable)
        held.append([lang, f"{fold['abstain_acc']:.3f}", fold["refused"], fold["answered"],
                     " / ".join(f"{other[s]['abstain_acc']:.3f}" for s in sorted(other)),
                     f"{never:.3f}"])
    held_header = ["lang", "two-fold accuracy", "answerable refused", "unanswerable answered",
                   "fitted on the other set: public / public2", "never abstaining"]
    return [
        "## Quality: `kb eval`", "", *table(header, rows),
        rec.run_line("public"), rec.run_line("public2"), "",
        *para("CI fails when a figure falls more than one question's worth below these "
              "(1/n of the n questions behind it, per language: what another CPU's arithmetic "
              "can move), or window recall or the answerable questions refused by a single "
              "question (`tests/assistant/test_eval.py`, `assistant/evaluation/record.py`); "
              "the starter's figures are from the last run of "
              "the same command that included it. The abstention model was fitted on both sets; "
              "held out:"),
        *table(held_header, held),
        rec.run_line("abstain", command=command), "",
    ]


def followups(rec: Recorded) -> list[str]:
    report = rec.report("followup")
    rows = []
    for lang in LANGS:
        ours, alone = report["ours"][lang], report["ours_alone"][lang]
        starter = report["llamaindex_starter"][lang]
        kinds = " / ".join(f"{m['in_window']:.3f}" for k, m in ours["kinds"].items()
                           if m["in_window"] is not None)
        kinds_alone = " / ".join(f"{m['in_window']:.3f}" for k, m in alone["kinds"].items()
                                 if m["in_window"] is not None)
        rows.append([lang, f"{ours['in_window']:.3f}", kinds, f"{ours['hit@1']:.3f}",
                     f"{fraction(ours['counts'])[0]}", f"{alone['in_window']:.3f}", kinds_alone,
                     f"{fraction(alone['counts'])[0]}", f"{starter['in_window']:.3f}"])
    kinds = " / ".join(k for k, m in report["ours"]["en"]["kinds"].items()
                       if m["in_window"] is not None)
    header = ["lang", "in-window, with history", f"by kind ({kinds})", "hit@1",
              "answerable refused", "in-window, alone", "alone, by kind",
              "alone, refused", "LlamaIndex starter in-window"]
    timing = rec.report("followup_latency")
    return [
        "## Follow-up questions: `kb eval ../shared/eval/followup`", "", *table(header, rows),
        rec.run_line("followup"), "",
        *para(f"Reading a follow-up with its history added {timing['p95_added_ms']} ms to "
              f"retrieval's p95 over all {timing['questions']} questions "
              f"({timing['alone']['p95_ms']} → {timing['with_history']['p95_ms']} ms, "
              f"{times(timing['alone']['p95_ms'] / timing['with_history']['p95_ms'])} the "
              f"follow-up alone) and {timing['p95_added_ms_leaning']} ms over the "
              f"{timing['leaning']} that lean on it, each question embedded anew:"),
        rec.run_line("followup_latency"), "",
    ]


def ingest(rec: Recorded) -> list[str]:
    rows = []
    for name, corpus in (("ingest", "public documents"), ("generated", "generated, PDF + DOCX")):
        report = rec.report(name)
        rounds = report["rounds"]
        label = f"{corpus} ({report['pages']:,} pages)"
        if len(rounds) > 1:
            label += f", {len(rounds)} rounds"
        ours = ", ".join(f"{r['ours']['pages_per_s']:.2f}" for r in rounds)
        starter = ", ".join(f"{r['llamaindex_starter']['pages_per_s']:.2f}" for r in rounds)
        rows.append([label, f"{ours} pages/s", f"{starter} pages/s",
                     f"**{times(report['ratio_ours_to_starter'])}**"])
    re_ = rec.report("reindex")
    cli, changed, unchanged = re_["cli"], re_["reindex_1pct_changed"], re_["reindex_unchanged"]
    reindex = [
        ["one file changed, in a process that stays up (the app, `kb worker`)",
         f"{changed['seconds']} s", f"{re_['fresh']['seconds']} s",
         f"**{times(changed['speedup_vs_fresh'])}**"],
        ["one file changed, as a new `kb reindex` command", f"{cli['reindex_1pct_changed_s']} s",
         f"{cli['fresh_s']} s (`kb ingest`)", f"**{times(cli['speedup_1pct_vs_fresh'])}**"],
        ["nothing changed, in a process / as a command",
         f"{unchanged['seconds']} s / {cli['reindex_unchanged_s']} s", "the same",
         f"{times(unchanged['speedup_vs_fresh'])} / {times(cli['speedup_unchanged_vs_fresh'])}"],
    ]
    gpu_rows, corpora = [], set()
    for report in rec.reports("gpu_ingest"):
        # runs are named "cuda, 8 worker(s)" and "cpu, 8 worker(s)"
        (key, gpu), = ((k, v) for k, v in report["runs"].items() if k.startswith("cuda"))
        (cpu,) = (v for k, v in report["runs"].items() if k.startswith("cpu"))
        gpu_rows.append([key.split(", ")[1].split()[0], f"{gpu['pages_per_s']:.2f} pages/s",
                         f"{cpu['pages_per_s']:.2f} pages/s", times(gpu["ratio_gpu_vs_cpu"])])
        corpora.add((report["pages"], gpu["ingested"] + gpu["failed"], gpu["failed"]))
    if len(corpora) != 1:
        raise ValueError(f"the GPU ingest reports measured different corpora: {corpora}")
    ((pages, count, failed),) = corpora
    return [
        "## Ingest", "",
        *table(["fresh ingest", "kb-assistant", "LlamaIndex starter, same run", "ratio"], rows),
        rec.run_line("ingest", "public documents"), rec.run_line("generated", "generated"), "",
        *table([f"re-index, {re_['files']} generated Word files", "kb-assistant",
                "fresh ingest, same run", "ratio"], reindex),
        rec.run_line("reindex"), "",
        f"With the embedder on the GPU ({pages:,} pages, {count} files, {failed} failing by "
        "design):", "",
        *table(["workers", "embedder on the GPU", "on the machine's CPU, same run", "ratio"],
               gpu_rows),
        rec.run_line("gpu_ingest"), "",
    ]


def latency(rec: Recorded) -> list[str]:
    rows = []
    query = rec.report("query")
    for user in ("all", "finance"):
        u = query[user]
        rows.append([f"retrieve + pack p95, {query['chunks']:,} chunks, user sees "
                     f"{u['visible_chunks'] / query['chunks']:.0%}",
                     f"{u['retrieve_pack_p95_ms']} ms (p50 {u['retrieve_pack_p50_ms']})",
                     f"Chroma's `where` filter alone: {u['chroma_where_only_p95_ms']} ms",
                     times(u["ratio_chroma_p95_to_ours_p95"])])
    million = rec.reports("query_1m")
    for user in ("all", "finance"):
        p95 = [r[user]["retrieve_pack_p95_ms"] for r in million]
        p50 = [r[user]["retrieve_pack_p50_ms"] for r in million]
        share = million[0][user]["visible_chunks"] / million[0]["chunks"]
        rows.append([f"retrieve + pack p95, {million[0]['chunks']:,} chunks, user sees "
                     f"{share:.0%}, {len(million)} runs", f"{span(p95)} ms (p50 {span(p50)})",
                     "not run", "–"])
    rows.append([f"memory at {million[0]['chunks']:,} chunks: after the snapshot (loaded in "
                 f"{span([r['snapshot_load_s'] for r in million], '{:.1f}')} s), at the end",
                 f"{span([r['rss_mib_after_snapshot'] for r in million], '{:,}')} MiB, "
                 f"{span([r['rss_mib_end'] for r in million], '{:,}')} MiB", "–", "–"])
    cold = rec.report("cold")
    kb, base = cold["kb"], cold["baseline"]
    rows.append([f"`kb ask` from a cold start, median of {cold['rounds']}",
                 f"{kb['kb_ask_wall_s_median']} s",
                 f"main before issue 12 ({cold['base']}): {base['kb_ask_wall_s_median']} s",
                 times(cold["ratio_baseline_to_kb"])])
    over = rec.reports("overhead")
    ours = [r["kb"] for r in over]
    main = [r["main_before_issue_12"] for r in over]
    rows.append([f"before the model request, share of time to first token (p50), {len(over)} "
                 "runs", f"{span([o['share']['p50'] for o in ours])} "
                 f"({span([o['before_request']['p50'] for o in ours])} ms of "
                 f"{span([o['first_token']['p50'] for o in ours])} ms)",
                 f"main before issue 12: {span([m['share']['p50'] for m in main])}",
                 span([r["ratio_before_request_main_to_kb_p50"] for r in over], "{:.3g}") + "×"])
    return [
        "## Query latency", "",
        *table(["", "kb-assistant", "baseline, same run", "ratio"], rows),
        rec.run_line("query", "100k"), rec.run_line("query_1m", "1M"), rec.run_line("cold", "cold"),
        rec.run_line("overhead", "before the request"), "",
    ]


def gpu_runs(rec: Recorded, name: str, flags: str) -> list[dict[str, Any]]:
    """The RAG-workload runs of one server, one vLLM replica, with these extra flags."""
    return [run for report in rec.reports(name) for run in report["runs"]
            if run["workload"] == "rag" and run.get("flags", "") == flags
            and run.get("replicas", 1) == 1]


def by_users(runs: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """The runs at each concurrency, fewest users first."""
    return {users: [r for r in runs if r["concurrency"] == users]
            for users in sorted({r["concurrency"] for r in runs})}


def meets(run: dict[str, Any]) -> bool:
    """The GPU serving goal: at least 100 RAG answers/s with TTFT p95 at most 500 ms."""
    return bool(run["req_per_s"] >= 100 and run["ttft_ms_p95"] <= 500)


def gpu_row(label: str, runs: list[dict[str, Any]]) -> list[str]:
    return [label, str(len(runs)), span([r["req_per_s"] for r in runs], "{:.1f}"),
            span([r["ttft_ms_p95"] for r in runs], "{:,.0f}") + " ms",
            f"{sum(map(meets, runs))} of {len(runs)}"]


def gpu(rec: Recorded) -> list[str]:
    runs = gpu_runs(rec, "gpu", CHOSEN_FLAGS)
    rows = [gpu_row(str(users), at) for users, at in by_users(runs).items()]
    other = by_users(gpu_runs(rec, "gpu_first", CHOSEN_FLAGS))
    rows.append(gpu_row("128, another H200", other[128]))
    for run in gpu_runs(rec, "gpu_first", ""):
        if run["concurrency"] in FLAGS_COMPARED_AT:
            rows.append(gpu_row(f"{run['concurrency']}, another H200, kb's flags alone", [run]))
    prompts, out = rec.reports("gpu")[0]["summary"]["rag"], runs[0]["completion_tokens_mean"]
    return [
        "## GPU serving", "",
        *para(f"{prompts['prompts']} kb-packed prompts (dev-set questions in 5 wordings, "
              f"{prompts['tokens_mean']:,.0f} tokens on average), {out} tokens out, streamed "
              f"through `LlmClient`; vLLM with kb's flags plus `{CHOSEN_FLAGS}` (no baseline ran "
              "beside them):"),
        *table(["concurrent users", "runs", "answers/s", "TTFT p95",
                "runs with ≥ 100/s at TTFT p95 ≤ 500 ms"], rows),
        rec.run_line("gpu"), rec.run_line("gpu_first", "another H200"), "",
    ]


def load(rec: Recorded) -> list[str]:
    rows, loads = [], []
    for n, entry in enumerate(rec.reports("load"), start=1):
        loads.append(entry["host"]["load_average"][0])
        report = entry["report"]
        loaded = report["runs"]["at once, page + API"]
        rows.append([
            str(n), str(loaded["questions"]), str(loaded["errors"]), str(loaded["busy"]),
            f"{loaded['p50_page_s']:.1f} / {loaded['p95_page_s']:.1f} s",
            f"{loaded['p50_api_s']:.1f} / {loaded['p95_api_s']:.1f} s",
            f"{report['baseline_p50_s']:.2f} s",
            f"{report['p50_ratio_to_alone']:.1f}× / {report['p95_ratio_to_alone']:.1f}×",
        ])
    return [
        "## Load", "",
        *para("50 askers at once, 25 through the page (logged in, waiting as a browser waits) "
              "and 25 through `POST /api/ask`, 2 questions each, against the vLLM CPU test "
              "server on the same 2 cores, shared with other jobs (load average "
              f"{min(loads):.0f}–{max(loads):.0f} as each run began); beside one asker alone in "
              "the same run:"),
        *table(["run", "questions", "errors", "busy", "page p50 / p95", "API p50 / p95",
                "alone p50", "p50 / p95 vs alone"], rows),
        rec.run_line("load", command="python -m bench load --full"), "",
    ]


WAYS = (("plain", "openai", "api"), ("streamed", "openai_stream", "api_stream"))
VARIANT_NAMES = {"api": "`/api/ask`", "openai": "`/v1`", "api_stream": "`/api/ask` streamed",
                 "openai_stream": "`/v1` streamed"}


def api_overhead(rec: Recorded) -> list[str]:
    loads, slow = [], []
    entries = rec.reports("openai")
    by_way: dict[str, list[dict[str, Any]]] = {way: [] for way, _, _ in WAYS}
    for n, entry in enumerate(entries, start=1):
        loads.append(entry["host"]["load_average"][0])
        report = entry["report"]
        slow += [f"{ms / 1000:.1f} s ({VARIANT_NAMES[kind]}, run {n})"
                 for _, kind, ms in report["slow_requests"]]
        for way, ours, base in WAYS:
            c = report[f"{ours}_vs_{base}"]
            by_way[way].append({"base": report[base]["p95_ms"], "ours": report[ours]["p95_ms"],
                                "diff": c["p95_diff_ms"], "paired": c["paired_diff_p95_ms"]})

    def ms(runs: list[dict[str, Any]], key: str, fmt: str = "{:.2f}") -> str:
        return span([r[key] for r in runs], fmt) + " ms"

    rows = [[way, ms(runs, "base"), ms(runs, "ours"), ms(runs, "diff", "{:+.2f}"),
             ms(runs, "paired", "{:+.2f}")] for way, runs in by_way.items()]
    first = entries[0]["report"]
    stalls = (f"Requests over 1 s, left in the figures: {', '.join(slow)}." if slow
              else "No request took over 1 s.")
    return [
        "## API overhead", "",
        *para(f"The same questions ({first['questions']}, cycled) asked of one `kb serve` "
              f"through `POST /api/ask` and `POST /v1/chat/completions`, {first['rounds']} rounds "
              "each way, plain and streamed, in a shuffled order, after a warm-up; the model "
              "unreachable, so every answer is retrieval-only and the endpoints' own work is "
              "what differs. `/api/ask` also keeps each answer in a conversation (two more "
              "ledger writes), which `/v1` leaves to its client. Times are the client's, to the "
              "whole reply, on 2 cores shared with other jobs (load average "
              f"{min(loads):.1f}–{max(loads):.1f} as each run began). {stalls}"),
        *table([f"way ({len(entries)} runs)", "`/api/ask` p95", "`/v1` p95",
                "p95 difference, `/v1` − `/api/ask`", "round by round, p95 of the difference"],
               rows),
        rec.run_line("openai", command="python -m bench openai --full"), "",
    ]


def audit_and_logins(rec: Recorded) -> list[str]:
    """Issue 26: what the audit trail adds to a question; a page during a wrong-login flood."""
    audit = rec.report("audit")
    ours = rec.report("login_flood")
    before = ours["before"]

    def flood_row(name: str, found: dict[str, Any]) -> list[str]:
        runs = found["runs"]
        return [name, f"{found['runs_under_goal']} of {found['runs_total']}",
                f"{found['worst_page_ms']:.0f} ms",
                f"{statistics.median(r['page_max_ms'] for r in runs):.0f} ms",
                f"{statistics.median(r['page_median_ms'] for r in runs):.0f} ms",
                f"{max(r['quiet_max_ms'] for r in runs):.0f} ms"]

    rows = [flood_row("now", ours), flood_row("before, served beside it", before)]
    return [
        "## Audit trail and wrong-login floods", "",
        *para(f"The audit events that follow a question (its {audit['views_per_question']} best "
              "passages' source views, chained by the trail's writer thread into the same "
              f"SQLite ledger meanwhile) added {audit['p95_added_ms']} ms to a question's p95 "
              f"{'(less than the run-to-run noise) ' if audit['p95_added_ms'] < 0 else ''}"
              f"({audit['without']['p95_ms']} → {audit['with_audit']['p95_ms']} ms; "
              f"{audit['questions']} questions × {audit['rounds']} rounds, retrieved and "
              "recorded as the app does before the model). A request spends "
              f"{audit['soon_per_event']['p95_ms'] * 1000:.0f} µs p95 per event handed to "
              "the writer; a record written at once (uploads, account changes) "
              f"{audit['record_per_event']['p95_ms']} ms p95:"),
        rec.run_line("audit"), "",
        *para(f"{ours['flood']} wrong sign-ins at once against `kb serve` on the same 2 cores "
              "as the client, a signed-in page request (`GET /`) timed throughout, "
              f"{ours['runs_total']} runs; before: the code before issue 26, served beside it, "
              "the two floods taking turns (each run's figures are in the report):"),
        *table(["code", "runs with every page under 300 ms", "slowest page",
                "median run's slowest page", "median page", "slowest page, no flood"], rows),
        rec.run_line("login_flood"), "",
    ]


def reproduce() -> list[str]:
    return [
        "## How to reproduce", "",
        "On a 2-core CPU machine with `../shared` beside the checkout and `.venv` set up:", "",
        "```bash",
        ".venv/bin/kb eval ../shared/eval/public --json     # quality; the same for public2",
        ".venv/bin/python -m bench ingest ingest-generated reindex cold query --full "
        "--out bench/results/NAME.json",
        ".venv/bin/python -m bench overhead --out bench/results/NAME-overhead.json",
        ".venv/bin/python -m bench.retrieve_latency --chunks 1000000 --no-where "
        "--questions-openvino   # builds /tmp/kb-bench-1m once",
        ".venv/bin/python -m bench load --full",
        ".venv/bin/python -m bench openai --full --out bench/results/NAME-openai.json",
        ".venv/bin/kb eval ../shared/eval/crosslang --docs ../shared/eval/public2/docs --json",
        ".venv/bin/python -m bench crosslang --full --out bench/results/NAME-crosslang.json",
        ".venv/bin/python -m bench.crosslang_translate   # and bench.crosslang_abstain",
        "```", "",
        *para("The GPU benchmarks run on a lent GPU machine (`docs/gpu.md`, sections 6 and 8). "
              "Then point the table's entry in `SOURCES` (`bench/recorded.py`) at the new "
              "reports and run `.venv/bin/python -m bench report`."),
    ]
