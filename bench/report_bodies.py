"""BENCHMARKS.md's tables of what reaches `kb serve` from outside: large API bodies (issue 36,
bench/body_flood.py) and chat platforms' callbacks (issue 42, bench/channels_ack.py)."""

from __future__ import annotations

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
    return [
        "## Chat platforms' callbacks", "",
        *para(f"Signed Slack events to `kb serve` (the model unreachable: retrieval-only "
              f"answers), one alone, then {ours['concurrent']} at once from as many threads, "
              f"{ours['rounds']} rounds, on the same 2 cores as the client, shared with other "
              f"jobs (load average {load:.0f} as it ended); each timed from send to its 200 "
              "(the answers follow it):"),
        *table(["events at once", "slowest acknowledgement", "median", "p95",
                "all answered"],
               [["1", f"{max(ours['alone_ms']):.0f} ms", f"{sorted(ours['alone_ms'])[1]:.0f} ms",
                 "", ""],
                [str(ours["concurrent"]), f"{ours['concurrent_max_ms']:.0f} ms",
                 f"{ours['concurrent_median_ms']:.0f} ms", f"{ours['concurrent_p95_ms']:.0f} ms",
                 f"within {max(ours['all_answered_s']):.1f} s"]]),
        rec.run_line("channels_ack"), "",
    ]
