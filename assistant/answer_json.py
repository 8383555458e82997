"""An answer and its passages as JSON: what `kb ask --json`, `kb retrieve --json` and
`POST /api/ask` give, one stable shape for programs (the OpenAI endpoint's `kb` field shares
`approved_to_json`).

    answer_to_json(answer)["citations"][0] -> {"n": 1, "file": "leave.pdf", "page": 3, ...}
"""

from __future__ import annotations

import time
from typing import Any

from core.types import Answer, ApprovedMark, Passage


def answer_to_json(answer: Answer) -> dict[str, Any]:
    """The stable JSON of `kb ask --json` and `POST /api/ask`."""
    return {
        "answer": answer.answer,
        "abstained": answer.abstained,
        "mode": answer.mode,
        "unverified": answer.unverified,
        "unsure": answer.unsure,  # weak evidence: the answer says nothing answers it
        "searched_for": answer.searched_for,
        "citations": [
            {
                "n": c.n,
                "file": c.file,
                "page": c.page,
                "page_label": c.page_label or None,
                "section": c.section,
                "quote": c.quote,
                # its document's review-by date, passed on the day of the answer
                "review_due": c.review_due or None,
            }
            for c in answer.citations
        ],
        "passages": [passage_to_json(p, n) for n, p in enumerate(answer.passages, 1)],
        "model_answer": answer.raw_answer if answer.mode == "fallback" else None,
        "approved": approved_to_json(answer.approved),
        "timings_ms": {k: round(v, 1) for k, v in answer.timings_ms.items()},
    }


def approved_day(at: float) -> str:
    """The day an answer was approved, as its mark shows it: approved_day(0.0) -> "1970-01-01"
    (in local time)."""
    return time.strftime("%Y-%m-%d", time.localtime(at))


def approved_to_json(mark: ApprovedMark | None) -> dict[str, Any] | None:
    """Who approved an answer served from an approved answer, and when; None for the others.

    approved_to_json(ApprovedMark(3, "alice", 0.0)) -> {"id": 3, "by": "alice",
        "on": "1970-01-01", "at": 0.0}
    """
    if mark is None:
        return None
    return {"id": mark.id, "by": mark.author, "on": approved_day(mark.approved_at),
            "at": mark.approved_at}


def passage_to_json(p: Passage, rank: int) -> dict[str, Any]:
    return {
        "rank": rank,
        "file": p.file,
        "page": p.page,
        "page_end": p.page_end,
        "page_label": p.page_label or None,
        "section": p.section_path,
        "text": p.text,
        "score": round(p.score, 6),
        "title": p.title,
        "superseded": p.superseded,
        "review_due": p.review_due or None,
        "chunk_id": p.chunk_id,
    }
