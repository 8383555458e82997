"""What the admin view shows about use: questions per day by language, abstention rate, thumbs
up and down, time to first token and per stage, the documents most and never cited, and the
knowledge gaps (questions the assistant abstained on or got a thumbs-down for, near-duplicates
grouped, most frequent first). Pure functions over the ledger's question records.

    rows = ledger.question_records()
    summary(rows)["abstention_rate"] -> 0.12
    knowledge_gaps(rows)[0].count -> 7
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from core.text import detect_lang, tokenize
from core.types import QuestionRecord
from ui.audit import csv_cell

STAGES = ("retrieve", "pack", "first_token", "total")
# Two questions are one gap when they share this share of their terms (Jaccard).
SAME_GAP = 0.5


def day_of(timestamp: float) -> str:
    """day_of(0.0) -> "1970-01-01" (UTC)"""
    return time.strftime("%Y-%m-%d", time.gmtime(timestamp))


def per_day(rows: Iterable[QuestionRecord]) -> list[tuple[str, str, int]]:
    """(day, language, questions), by day then language."""
    counts = Counter((day_of(r.created_at), detect_lang(r.question)) for r in rows)
    return [(day, lang, n) for (day, lang), n in sorted(counts.items())]


def _percentile(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(np.asarray(values), q)), 1) if values else None


def latency(rows: Iterable[QuestionRecord]) -> dict[str, dict[str, float | None]]:
    """p50 and p95 (ms) of each stage over the question records."""
    timings = [json.loads(r.timings or "{}") for r in rows]
    return {
        stage: {
            "p50": _percentile([t[stage] for t in timings if stage in t], 50),
            "p95": _percentile([t[stage] for t in timings if stage in t], 95),
        }
        for stage in STAGES
    }


def summary(rows: Sequence[QuestionRecord]) -> dict[str, object]:
    """Totals, rates and latency percentiles (ms) of the question records."""
    total = len(rows)
    by_mode = Counter(r.mode for r in rows)
    return {
        "questions": total,
        "by_mode": dict(by_mode),
        "abstention_rate": round(by_mode["abstained"] / total, 3) if total else None,
        "thumbs_up": sum(1 for r in rows if r.rating == 1),
        "thumbs_down": sum(1 for r in rows if r.rating == -1),
        "latency_ms": latency(rows),
    }


def cited_documents(
    rows: Iterable[QuestionRecord], doc_of_chunk: Mapping[str, str], documents: Iterable[str]
) -> tuple[list[tuple[str, int]], list[str]]:
    """The documents by how often answers cited them, most first, and those never cited.
    `doc_of_chunk` maps live chunk ids to document names; `documents` are all visible ones."""
    counts: Counter[str] = Counter()
    for r in rows:
        for doc in {doc_of_chunk[c] for c in r.chunk_ids if c in doc_of_chunk}:
            counts[doc] += 1
    never = sorted(set(documents) - set(counts))
    return counts.most_common(), never


@dataclass
class Gap:
    """Questions the documents failed to answer, grouped: `key` names the group for notes."""

    key: str
    question: str  # the earliest wording
    count: int = 0
    abstained: int = 0  # refused, or answered on weak evidence (QuestionRecord.unsure)
    thumbs_down: int = 0
    last_asked: float = 0.0
    wordings: list[str] = field(default_factory=list)
    note: str = ""


def is_gap(row: QuestionRecord) -> bool:
    return row.mode == "abstained" or row.unsure or row.rating == -1


def _terms(question: str) -> frozenset[str]:
    return frozenset(tokenize(question))


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a | b) and len(a & b) / len(a | b) >= SAME_GAP


def knowledge_gaps(
    rows: Iterable[QuestionRecord], notes: Mapping[str, str] | None = None
) -> list[Gap]:
    """Gap questions grouped by shared words (oldest wording first, so a group keeps its key as
    questions arrive), most frequent first.

    knowledge_gaps([abstained "Is there a gym?", abstained "is there a gym"])[0].count -> 2
    """
    gaps: list[tuple[frozenset[str], Gap]] = []
    for row in sorted((r for r in rows if is_gap(r)), key=lambda r: (r.created_at, r.id)):
        terms = _terms(row.question)
        gap = next((g for t, g in gaps if _similar(t, terms)), None)
        if gap is None:
            key = hashlib.sha1(" ".join(sorted(terms)).encode()).hexdigest()[:12]
            gap = Gap(key=key, question=row.question)
            gaps.append((terms, gap))
        gap.count += 1
        gap.abstained += row.mode == "abstained" or row.unsure
        gap.thumbs_down += row.rating == -1
        gap.last_asked = max(gap.last_asked, row.created_at)
        if row.question not in gap.wordings:
            gap.wordings.append(row.question)
    found = [g for _, g in gaps]
    for gap in found:
        gap.note = (notes or {}).get(gap.key, "")
    return sorted(found, key=lambda g: (-g.count, -g.last_asked))


GAP_COLUMNS = (
    "key",
    "question",
    "count",
    "abstained",
    "thumbs_down",
    "last_asked",
    "wordings",
    "note",
)


def gap_rows(gaps: Iterable[Gap]) -> list[list[object]]:
    return [
        [
            g.key,
            g.question,
            g.count,
            g.abstained,
            g.thumbs_down,
            day_of(g.last_asked),
            " | ".join(g.wordings),
            g.note,
        ]
        for g in gaps
    ]


def gaps_csv(gaps: Iterable[Gap]) -> str:
    """The gaps as CSV with a header row (spreadsheet formulas neutralised)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(GAP_COLUMNS)
    for row in gap_rows(gaps):
        writer.writerow([csv_cell(v) for v in row])
    return out.getvalue()


def daily_table(rows: Sequence[QuestionRecord]) -> dict[str, list[object]]:
    """Columns for the questions-per-day plot."""
    table: dict[str, list[object]] = defaultdict(list)
    for day, lang, n in per_day(rows):
        table["day"].append(day)
        table["language"].append(lang)
        table["questions"].append(n)
    return dict(table)
