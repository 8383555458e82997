"""The figures of BENCHMARKS.md on the library: the shared sets in one store of public's and
public2's documents (the "library" part of bench/eval_*.json, `python -m bench.quality.library
--record`; sections.py and crosslang.py put its figures beside each set's own), and window recall
and retrieve + pack latency as generated distractors grow that store
(bench/query/library_scale.py)."""

from __future__ import annotations

from typing import Any

from bench.report.recorded import Recorded
from bench.report.sections import rows

SETS = ("public", "public2", "followup", "crosslang")
RECORD = "python -m bench.quality.library --record"


def step(s: dict[str, Any]) -> list[str]:
    """One size of the library as a table row."""
    window = [f"{s[name]['in_window']:.3f}" for name in SETS]
    timing = f"{s['p50_ms']:.0f} / {s['p95_ms']:.0f}"
    cpu = f"{s['cpu_p50_ms']:.0f} / {s['cpu_p95_ms']:.0f}"
    return [f"{s['documents']:,}", f"{s['passages']:,}", *window, timing, cpu,
            f"{s['host']['load_average'][0]:.1f}"]  # fmt: skip


def loss(item: dict[str, Any]) -> list[str]:
    """A question that lost its place in the library store, as a table row."""
    ranks = " → ".join(str(r or "-") for r in item["rank"])
    window = " → ".join("yes" if w else "no" for w in item["window"])
    return [f"{item['id']}: {item['question']}", ranks, window, ", ".join(item["took"])]


def library(rec: Recorded) -> dict[str, str]:
    size = rec.report("public")["library"]
    scale = rec.report("library_scale")
    first, last = scale["steps"][0], scale["steps"][-1]
    return {
        "documents": str(size["documents"]),
        "passages": f"{size['passages']:,}",
        "run": rec.run_line("public", RECORD),
        "scale_rows": rows([step(s) for s in scale["steps"]]),
        "top_documents": f"{last['documents']:,}",
        "top_passages": f"{last['passages']:,}",
        "window_first": " / ".join(f"{first[n]['in_window']:.3f}" for n in SETS),
        "window_last": " / ".join(f"{last[n]['in_window']:.3f}" for n in SETS),
        "p95_first": f"{first['p95_ms']:.0f}",
        "p95_last": f"{last['p95_ms']:.0f}",
        "cpu_first": f"{first['cpu_p95_ms']:.0f}",
        "cpu_last": f"{last['cpu_p95_ms']:.0f}",
        "load": f"{min(s['host']['load_average'][0] for s in scale['steps']):.1f}–"
                f"{max(s['host']['load_average'][0] for s in scale['steps']):.1f}",
        "run_scale": rec.run_line("library_scale"),
        "losses": rows([loss(item) for item in rec.report("library_losses")["losses"]]),
        "run_losses": rec.run_line("library_losses"),
        "noise_dense": str(scale["noise"]["dense"]),
        "noise_space": str(scale["noise"]["space"]),
    }
