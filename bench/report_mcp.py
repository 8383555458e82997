"""BENCHMARKS.md's MCP table (issue 41), from `python -m bench mcp` (bench/mcp_overhead.py): the
`ask` tool through the official client against `POST /api/ask` and `/v1/chat/completions`, the
same questions in turn. Its goal is judged in bench/report_goals.py."""

from __future__ import annotations

from bench.recorded import Recorded, span
from bench.report_sections import para, table

# (the row's name, the comparison's key in the report)
COMPARED = (("tool call (2026-07-28) − `/api/ask`", "mcp_vs_api"),
            ("tool call in a session (2025-11-25) − `/api/ask`", "mcp_legacy_vs_api"),
            ("tool call (2026-07-28) − `/v1`", "mcp_vs_v1"),
            ("the call posted by hand − `/api/ask`", "mcp_raw_vs_api"))
NAMES = {"api": "`/api/ask`", "v1": "`/v1`", "mcp": "tool call",
         "mcp_legacy": "tool call (session)", "mcp_raw": "the call posted by hand"}


def mcp_overhead(rec: Recorded) -> list[str]:
    entries = rec.reports("mcp")
    reports = [entry["report"] for entry in entries]
    loads = [entry["host"]["load_average"][0] for entry in entries]
    slow = [f"{ms / 1000:.1f} s ({NAMES[kind]}, run {n})"
            for n, report in enumerate(reports, start=1) for _, kind, ms in report["slow_requests"]]

    def ms(values: list[float], fmt: str = "{:.2f}") -> str:
        return span(values, fmt) + " ms"

    p95 = [[NAMES[way], ms([r[way]["p50_ms"] for r in reports]),
            ms([r[way]["p95_ms"] for r in reports])] for way in NAMES]
    diffs = [[name, ms([r[key]["p50_diff_ms"] for r in reports], "{:+.2f}"),
              ms([r[key]["p95_diff_ms"] for r in reports], "{:+.2f}"),
              span([r[key]["p95_ratio"] for r in reports], "{:.2f}"),
              ms([r[key]["paired_diff_p95_ms"] for r in reports], "{:+.2f}")]
             for name, key in COMPARED]
    first = reports[0]
    stalls = (f"Calls over 1 s, left in the figures: {', '.join(slow)}." if slow
              else "No call took over 1 s.")
    return [
        "## MCP overhead", "",
        *para(f"The same questions ({first['questions']}, cycled) asked of one `kb serve` "
              f"{first['rounds']} rounds each way, in a shuffled order, after a warm-up: "
              "`POST /api/ask`, `POST /v1/chat/completions`, and the `ask` tool through the "
              "official `mcp` client over streamable HTTP (the current revision, each call one "
              "request; and the earlier one, in a session), and the current revision's call "
              "posted by hand (the server's part, without the client SDK's own work); the "
              "model unreachable, so every answer is retrieval-only. `/api/ask` also keeps "
              "each answer in a conversation (two more ledger writes) that `/v1` and the tool "
              "leave to their client. Times "
              "are the client's (httpx2, the SDK's HTTP library, one event loop), to the parsed "
              "result, on 2 cores shared with other jobs (load average "
              f"{min(loads):.1f}–{max(loads):.1f} as each run began). {stalls}"),
        *table([f"way ({len(reports)} runs)", "p50", "p95"], p95),
        *table(["difference", "p50 difference", "p95 difference", "p95 ratio",
                "round by round, p95 of the difference"], diffs),
        rec.run_line("mcp", command="python -m bench mcp --full"), "",
    ]

