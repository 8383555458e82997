"""The admin tab's figures as people read them: the store's status, a run's summary and the
insights' totals as sentences with units and dates, never a JSON dump (no epoch seconds, no
nulls, no absolute paths), and a sentence saying why a chart is empty. Pure functions.

    size(2_337_826) -> "2.2 MB"
    when(0.0) -> "1970-01-01 00:00 UTC"
    run_line("reindex", {"ingested": 0, "unchanged": 12, "failed": 0}, 9.1)
        -> "Re-index: 12 files in 9.1 s: 12 unchanged"
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from core.types import IngestReport

RUN_NAMES = {"ingest": "Ingest", "reindex": "Re-index", "upload": "Upload", "sync": "Sync"}
OUTCOMES = ("ingested", "updated", "unchanged", "removed", "skipped", "failed")


def size(n: float) -> str:
    """size(512) -> "512 B";  size(2_337_826) -> "2.2 MB" """
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # not reached


def when(at: float) -> str:
    """A time as people read it: when(0.0) -> "1970-01-01 00:00 UTC" """
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def counted(counts: Mapping[str, Any]) -> str:
    """counted({"ingested": 2, "failed": 0, "unchanged": 3}) -> "2 ingested, 3 unchanged" """
    return ", ".join(f"{counts[k]} {k}" for k in OUTCOMES if counts.get(k)) or "nothing to do"


def run_line(kind: str, counts: Mapping[str, Any], seconds: float) -> str:
    """One line for a run an admin started: what it was, how many files, how long, what became
    of them."""
    files = sum(int(counts.get(k, 0) or 0) for k in OUTCOMES)
    name = RUN_NAMES.get(kind, kind)
    return f"{name}: {files} file{'s' if files != 1 else ''} in {seconds:.1f} s: {counted(counts)}"


def report_line(kind: str, report: IngestReport | None, seconds: float) -> str:
    """`run_line` of an ingest report ("" when nothing ran)."""
    return "" if report is None else run_line(kind, report.counts, seconds)


def status_lines(status: Mapping[str, Any]) -> str:
    """The store's status (ingest.pipeline.store_status) as Markdown lines."""
    states = ", ".join(f"{n} {s}" for s, n in sorted(status.get("by_status", {}).items()))
    lines = [f"**{status['documents']} documents** ({states or 'none yet'}) · "
             f"{status['chunks']} passages · {status['vectors']} vectors · "
             f"{size(status['store_bytes'])} on disk, {size(status['free_disk_bytes'])} free"]
    lines.append(f"Embedder: {status['embedder']} · cross-language space: "
                 f"{status['multilingual']}")
    last = status.get("last_run")
    if last:
        took = (last.get("ended_at") or last["started_at"]) - last["started_at"]
        given = json.loads(last.get("args") or "{}").get("paths") or []  # see-all admins only
        of = f" ({', '.join(p.rstrip('/').rsplit('/', 1)[-1] for p in given[:3])}" + (
            ", …)" if len(given) > 3 else ")") if given else ""
        lines.append(f"Last run: {when(last['started_at'])}, "
                     f"{run_line(last.get('kind', 'ingest'), last, took)}{of}")
    else:
        lines.append("No ingest run yet: upload files above, or run `kb ingest FOLDER`.")
    jobs = status.get("jobs") or {}
    if any(jobs.values()):
        lines.append("Ingest queue: " + ", ".join(f"{n} {s}" for s, n in sorted(jobs.items())))
    return "  \n".join(lines)


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f} ms"


def insight_lines(summary: Mapping[str, Any], see_all: bool) -> str:
    """The insights' totals (ui/admin/insights.py `summary`) as Markdown lines; with no
    questions, a sentence saying why there are none."""
    total = summary["questions"]
    if not total:
        whose = "" if see_all else (" by people in your groups (an admin without see-all sees "
                                     "only those)")
        return f"No questions asked yet{whose}: the figures and charts fill as people ask."
    modes = ", ".join(f"{n} {mode.replace('_', '-')}"
                      for mode, n in sorted(summary["by_mode"].items()))
    rate = summary["abstention_rate"] or 0.0
    total_ms = summary["latency_ms"]["total"]
    first = summary["latency_ms"]["first_token"]
    return "  \n".join([
        f"**{total} questions** ({modes}) · refused {rate:.0%} · "
        f"{summary['thumbs_up']} helpful, {summary['thumbs_down']} not helpful",
        f"Answer time: median {ms(total_ms['p50'])}, 95th percentile {ms(total_ms['p95'])} · "
        f"first words of a generated answer: median {ms(first['p50'])}",
    ])


def detail_text(details: str, names: Mapping[str, str]) -> str:
    """An audit record's details as the trail shows them: chunk ids as their documents' file
    names (`names`: chunk id -> file name), absolute paths as file names.

    detail_text('{"cites": ["ab12"], "path": "/srv/kb/up/leave.pdf"}', {"ab12": "leave.pdf"})
        -> "cites=leave.pdf, path=leave.pdf"
    """
    return ", ".join(f"{k}={shown(v, names)}" for k, v in json.loads(details or "{}").items())


def shown(value: Any, names: Mapping[str, str]) -> str:
    """A value of the audit trail as shown: a chunk id as its file name, an absolute path as
    its name, a list item by item.

    shown(["/srv/up/a.pdf", "c1"], {"c1": "b.docx"}) -> "a.pdf; b.docx"
    """
    if isinstance(value, list):
        return "; ".join(shown(v, names) for v in value)
    text = str(value)
    if text in names:
        return names[text]
    if text.startswith("/") and "/" in text[1:]:
        return text.rsplit("/", 1)[1]
    return text
