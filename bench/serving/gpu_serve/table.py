"""`python -m bench.serving.gpu_serve table RESULTS...`: the Markdown table of results files, one
row a scenario (`run` prints each row as it finishes).

    | server | workload | concurrency | ok/sent | prompt tok | req/s | out tok/s | ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HEADER = (
    "| server | workload | concurrency | ok/sent | prompt tok | req/s | out tok/s | "
    "TTFT p50 / p95 ms | e2e p50 / p95 s | prefix-cache hits | GPU util % |"
)


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
    print(HEADER)
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path in a.results:
        for r in json.loads(Path(path).read_text())["runs"]:
            print(row(r))
