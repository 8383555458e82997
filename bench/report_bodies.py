"""BENCHMARKS.md's tables of what reaches `kb serve` from outside: large API bodies (issue 36,
bench/body_flood.py) and chat platforms' callbacks (issue 42, bench/channels_ack.py)."""

from __future__ import annotations

import statistics
from typing import Any

from bench.recorded import Recorded
from bench.report_sections import para, table


def body_floods(rec: Recorded) -> list[str]:
    ours = rec.report("body_flood")
    before = ours["before"]
    attacks = ours["attacks"]

    def row(name: str, found: dict[str, Any]) -> list[str]:
        return [name, *(f"{found[f'{kind}_worst_ms'] / 1000:.2f} s" for kind in attacks),
                f"{max(found[f'{kind}_worst_quiet_ms'] for kind in attacks):.0f} ms"]

    messages, numbers = attacks["messages"], attacks["numbers"]
    return [
        "## Large API bodies", "",
        *para(f"A token holder's large bodies to `POST /v1/chat/completions` of `kb serve` on the "
              "same 2 cores as the client, shared with other jobs (load average "
              f"{ours['host']['load_average'][0]:.0f} as it began), another user's "
              "`GET /v1/models` timed throughout, "
              f"{len(ours['runs']) // len(attacks)} runs of each attack: {messages['bodies']} "
              f"bodies at once of {messages['size']:,} messages (5.8 MiB each), and one body "
              f"whose content is {numbers['size']:,} numbers (0.6 MiB); before: the code before "
              "issue 36, served beside it, the attacks taking turns (each run's figures are in "
              "the report):"),
        *table(["code", "slowest request, messages", "slowest request, numbers",
                "slowest request, no attack"], [row("now", ours), row("before", before)]),
        rec.run_line("body_flood"), "",
    ]


def channel_callbacks(rec: Recorded) -> list[str]:
    ours = rec.report("channels_ack")
    load = ours["host"]["load_average"][0]
    n = ours["concurrent"]
    rows = [[name, f"{max(p['alone_ms']):.0f} ms", f"{p['concurrent_max_ms']:.0f} ms",
             f"{p['concurrent_max_ms'] / statistics.median(p['alone_ms']):.0f}×",
             f"{p['concurrent_median_ms']:.0f} ms", f"{p['concurrent_p95_ms']:.0f} ms",
             f"within {max(p['all_answered_s']):.1f} s"]
            for name, p in ours["platforms"].items()]
    return [
        "## Chat platforms' callbacks", "",
        *para(f"Signed events of each platform to one `kb serve` with all five enabled (the model "
              f"unreachable: retrieval-only answers), per platform one alone, then {n} at once "
              f"from as many threads, {ours['rounds']} rounds, on the same 2 cores as the "
              f"client, shared with other jobs (load average {load:.0f} as it ended); each timed "
              "from send to its 200 (the answers follow it):"),
        *table(["platform", "alone, slowest", f"{n} at once, slowest",
                "slowest ÷ alone (median)", "median", "p95", "all answered"], rows),
        rec.run_line("channels_ack"), "",
    ]
