"""The figures of BENCHMARKS.md's quality, ingest, query and GPU sections, read from the
recorded reports (bench/report/recorded.py).

Each section is a function of a `Recorded` that returns its placeholders' values, named as the
templates name them without the section's prefix (`quality(rec)["rows"]` fills
`{{quality.rows}}`). Values are figures, table rows and run lines; the words around them are the
templates'.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bench.report.recorded import CHOSEN_FLAGS, Recorded, span, times

LANGS = ("en", "zh")
SETS = ("public", "public2")
FLAGS_COMPARED_AT = (64, 256)  # the concurrencies the history compares vLLM's flags at


def rows(cells: list[list[str]]) -> str:
    """Markdown table rows, under a header the template writes.

    rows([["a", "1"], ["b", "2"]]) -> "| a | 1 |\\n| b | 2 |"
    """
    return "\n".join(f"| {' | '.join(row)} |" for row in cells)


def fraction(text: str) -> tuple[int, int]:
    """The first "a/b" of a text.

    fraction("refused 0/42, answered 7/8") -> (0, 42)
    """
    found = re.search(r"(\d+)/(\d+)", text)
    if found is None:
        raise ValueError(f"no a/b in {text!r}")
    return int(found[1]), int(found[2])


def held_out(rec: Recorded) -> tuple[str, dict[str, Any]]:
    """The fit command and its held-out checks, as the shipped answerability model notes them."""
    command, _, checks = rec.report("abstain")["note"].partition("; held-out checks: ")
    return command, json.loads(checks)


def shared(figures: dict[str, Any]) -> str:
    """A figure in the library store (bench/report/library.py): window recall (hit@1).

    shared({"in_window": 0.95, "hit@1": 0.8}) -> "0.950 (0.800)"
    """
    return f"{figures['in_window']:.3f} ({figures['hit@1']:.3f})"


def quality(rec: Recorded) -> dict[str, str]:
    found = []
    for name in SETS:
        report = rec.report(name)
        for lang in LANGS:
            ours, starter = report["ours"][lang], report["llamaindex_starter"][lang]
            counts = ours["counts"].replace("refused ", "").replace("answered ", "")
            found.append([f"{name} · {lang}", *(f"{ours[m]:.3f}" for m in
                          ("hit@1", "hit@5", "mrr@10", "in_window", "abstain_acc")),
                          counts, f"{starter['hit@1']:.3f} / {starter['hit@5']:.3f}",
                          shared(report["library"]["ours"][lang])])
    command, checks = held_out(rec)
    held = []
    for lang in LANGS:
        fold, other = checks[lang]["two_fold"], checks[lang]["other_sets"]
        answerable, unanswerable = fraction(fold["refused"])[1], fraction(fold["answered"])[1]
        never = answerable / (answerable + unanswerable)
        held.append([lang, f"{fold['abstain_acc']:.3f}", fold["refused"], fold["answered"],
                     " / ".join(f"{other[s]['abstain_acc']:.3f}" for s in sorted(other)),
                     f"{never:.3f}"])
    return {"rows": rows(found), "run_public": rec.run_line("public"),
            "run_public2": rec.run_line("public2"), "held_out": rows(held),
            "run_abstain": rec.run_line("abstain", command=command)}


def followups(rec: Recorded) -> dict[str, str]:
    report = rec.report("followup")
    found = []
    for lang in LANGS:
        ours, alone = report["ours"][lang], report["ours_alone"][lang]
        starter = report["llamaindex_starter"][lang]
        kinds = " / ".join(f"{m['in_window']:.3f}" for m in ours["kinds"].values()
                           if m["in_window"] is not None)
        kinds_alone = " / ".join(f"{m['in_window']:.3f}" for m in alone["kinds"].values()
                                 if m["in_window"] is not None)
        found.append([lang, f"{ours['in_window']:.3f}", kinds, f"{ours['hit@1']:.3f}",
                      f"{fraction(ours['counts'])[0]}", f"{alone['in_window']:.3f}",
                      kinds_alone, f"{fraction(alone['counts'])[0]}",
                      f"{starter['in_window']:.3f}", shared(report["library"]["ours"][lang])])
    timing = rec.report("followup_latency")
    alone_p95, with_p95 = timing["alone"]["p95_ms"], timing["with_history"]["p95_ms"]
    return {
        "rows": rows(found), "run": rec.run_line("followup"),
        "kinds": " / ".join(k for k, m in report["ours"]["en"]["kinds"].items()
                            if m["in_window"] is not None),
        "added": str(timing["p95_added_ms"]), "added_leaning": str(timing["p95_added_ms_leaning"]),
        "questions": str(timing["questions"]), "leaning": str(timing["leaning"]),
        "alone_p95": str(alone_p95), "with_p95": str(with_p95),
        "ratio": times(alone_p95 / with_p95), "run_latency": rec.run_line("followup_latency"),
    }


def ingest(rec: Recorded) -> dict[str, str]:
    fresh = {}
    for name in ("ingest", "generated"):
        report = rec.report(name)
        found = report["rounds"]
        fresh[name] = " | ".join([
            ", ".join(f"{r['ours']['pages_per_s']:.2f}" for r in found) + " pages/s",
            ", ".join(f"{r['llamaindex_starter']['pages_per_s']:.2f}" for r in found) + " pages/s",
            f"**{times(report['ratio_ours_to_starter'])}**"])
        fresh[f"{name}_pages"] = f"{report['pages']:,}"
    fresh["generated_rounds"] = str(len(rec.report("generated")["rounds"]))
    re_ = rec.report("reindex")
    cli, changed, unchanged = re_["cli"], re_["reindex_1pct_changed"], re_["reindex_unchanged"]
    return {
        **fresh, "run_public": rec.run_line("ingest"),
        "run_generated": rec.run_line("generated"), "files": str(re_["files"]),
        "up_s": str(changed["seconds"]), "fresh_s": str(re_["fresh"]["seconds"]),
        "up_ratio": times(changed["speedup_vs_fresh"]),
        "cli_s": str(cli["reindex_1pct_changed_s"]), "cli_fresh_s": str(cli["fresh_s"]),
        "cli_ratio": times(cli["speedup_1pct_vs_fresh"]),
        "unchanged_s": str(unchanged["seconds"]),
        "cli_unchanged_s": str(cli["reindex_unchanged_s"]),
        "unchanged_ratio": times(unchanged["speedup_vs_fresh"]),
        "cli_unchanged_ratio": times(cli["speedup_unchanged_vs_fresh"]),
        "run_reindex": rec.run_line("reindex"), **gpu_ingest(rec),
    }


def gpu_ingest(rec: Recorded) -> dict[str, str]:
    found, corpora = [], set()
    for report in rec.reports("gpu_ingest"):
        # runs are named "cuda, 8 worker(s)" and "cpu, 8 worker(s)"
        (key, gpu), = ((k, v) for k, v in report["runs"].items() if k.startswith("cuda"))
        (cpu,) = (v for k, v in report["runs"].items() if k.startswith("cpu"))
        found.append([key.split(", ")[1].split()[0], f"{gpu['pages_per_s']:.2f} pages/s",
                      f"{cpu['pages_per_s']:.2f} pages/s", times(gpu["ratio_gpu_vs_cpu"])])
        corpora.add((report["pages"], gpu["ingested"] + gpu["failed"], gpu["failed"]))
    if len(corpora) != 1:
        raise ValueError(f"the GPU ingest reports measured different corpora: {corpora}")
    ((pages, count, failed),) = corpora
    return {"gpu_rows": rows(found), "gpu_pages": f"{pages:,}", "gpu_files": str(count),
            "gpu_failed": str(failed), "run_gpu": rec.run_line("gpu_ingest")}


def latency(rec: Recorded) -> dict[str, str]:
    query, million = rec.report("query"), rec.reports("query_1m")
    found = {"chunks": f"{query['chunks']:,}", "million": f"{million[0]['chunks']:,}",
             "million_runs": str(len(million))}
    for user in ("all", "finance"):
        u = query[user]
        found[f"{user}_share"] = f"{u['visible_chunks'] / query['chunks']:.0%}"
        found[user] = f"{u['retrieve_pack_p95_ms']} ms (p50 {u['retrieve_pack_p50_ms']})"
        found[f"{user}_where"] = str(u["chroma_where_only_p95_ms"])
        found[f"{user}_ratio"] = times(u["ratio_chroma_p95_to_ours_p95"])
        found[f"million_{user}_share"] = (
            f"{million[0][user]['visible_chunks'] / million[0]['chunks']:.0%}")
        found[f"million_{user}"] = (
            f"{span([r[user]['retrieve_pack_p95_ms'] for r in million])} ms "
            f"(p50 {span([r[user]['retrieve_pack_p50_ms'] for r in million])})")
    found["snapshot_s"] = span([r["snapshot_load_s"] for r in million], "{:.1f}")
    found["memory"] = (f"{span([r['rss_mib_after_snapshot'] for r in million], '{:,}')} MiB, "
                       f"{span([r['rss_mib_end'] for r in million], '{:,}')} MiB")
    cold = rec.report("cold")
    found |= {"cold_rounds": str(cold["rounds"]), "cold": str(cold["kb"]["kb_ask_wall_s_median"]),
              "cold_base": cold["base"],
              "cold_before": str(cold["baseline"]["kb_ask_wall_s_median"]),
              "cold_ratio": times(cold["ratio_baseline_to_kb"])}
    over = rec.reports("overhead")
    ours = [r["kb"] for r in over]
    found |= {
        "overhead_runs": str(len(over)),
        "share": span([o["share"]["p50"] for o in ours]),
        "before_ms": span([o["before_request"]["p50"] for o in ours]),
        "first_token_ms": span([o["first_token"]["p50"] for o in ours]),
        "share_before": span([r["main_before_issue_12"]["share"]["p50"] for r in over]),
        "share_ratio": span([r["ratio_before_request_main_to_kb_p50"] for r in over], "{:.3g}"),
    }
    return found | {"run_query": rec.run_line("query"), "run_million": rec.run_line("query_1m"),
                    "run_cold": rec.run_line("cold"), "run_overhead": rec.run_line("overhead")}


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


def gpu(rec: Recorded) -> dict[str, str]:
    runs = gpu_runs(rec, "gpu", CHOSEN_FLAGS)
    other = by_users(gpu_runs(rec, "gpu_first", CHOSEN_FLAGS))
    alone = {run["concurrency"]: run for run in gpu_runs(rec, "gpu_first", "")}
    prompts = rec.reports("gpu")[0]["summary"]["rag"]
    return {
        "rows": rows([gpu_row(str(users), at) for users, at in by_users(runs).items()]),
        "other_128": " | ".join(gpu_row("", other[128])[1:]),
        **{f"alone_{users}": " | ".join(gpu_row("", [alone[users]])[1:])
           for users in FLAGS_COMPARED_AT},
        "prompts": str(prompts["prompts"]), "tokens": f"{prompts['tokens_mean']:,.0f}",
        "out": str(runs[0]["completion_tokens_mean"]), "flags": CHOSEN_FLAGS,
        "run": rec.run_line("gpu"), "run_other": rec.run_line("gpu_first"),
    }
