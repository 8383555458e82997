"""Markdown rows from `kb eval --json` reports, for docs/benchmarks-history.md.

    python -m bench.quality.eval_table NAME=report.json [NAME=report.json ...] [--kinds]

One row per report and language (ours, then the LlamaIndex starter when the report has it);
with --kinds, one more row per question kind.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

COLUMNS = ("hit@1", "hit@5", "mrr@10", "in_window", "abstain_acc")


def cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def rows(name: str, report: dict[str, Any], kinds: bool) -> list[str]:
    out = []
    for system in ("ours", "llamaindex_starter"):
        if system not in report:
            continue
        label = name if system == "ours" else f"{name} · starter"
        for lang in ("en", "zh"):
            m = report[system][lang]
            values = " | ".join(cell(m.get(c)) for c in COLUMNS)
            out.append(f"| {label} · {lang} | {values} | {m.get('counts', '')} |")
            if kinds and system == "ours":
                for kind, k in m.get("kinds", {}).items():
                    values = " | ".join(cell(k[c]) for c in COLUMNS)
                    out.append(f"| {label} · {lang} · {kind} | {values} | {k['counts']} |")
    return out


def main(argv: list[str]) -> None:
    kinds = "--kinds" in argv
    print("| run · lang | " + " | ".join(COLUMNS) + " | abstention errors |")
    print("| --- |" + " --- |" * (len(COLUMNS) + 1))
    for arg in argv:
        if arg.startswith("--"):
            continue
        name, _, path = arg.partition("=")
        for row in rows(name, json.loads(Path(path).read_text("utf-8")), kinds):
            print(row)


if __name__ == "__main__":
    main(sys.argv[1:])
