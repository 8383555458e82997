"""`kb eval` of a cross-language set: each question is asked in the language its document is not
written in (`lang` differs from `doc_lang`) and names the same-language question with the same
gold (`mirror_of`, an item of the set whose `qa.jsonl` sits beside the documents: the crosslang
set's mirrors are public2's). Results are reported per direction ("en→zh": English questions
over Chinese documents), each beside its control: the mirror questions, retrieved from the same
store and scored against the same gold. The bridge's gate (retrieve.bilingual*) is recorded with
its readings per question. Only the mirrors' `question` and `lang` are read.

    direction({"lang": "en", "doc_lang": "zh"}) -> "en→zh"
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core.config import Settings


def direction(item: Mapping[str, Any]) -> str:
    """The direction of a cross-language item: its language, then its document's."""
    return f"{item['lang']}→{item['doc_lang']}"


def is_crosslang(questions: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a set asks across languages (its items name a `doc_lang` and a `mirror_of`)."""
    return any(q.get("doc_lang") and q.get("mirror_of") for q in questions)


def mirrors(questions: Sequence[Mapping[str, Any]], docs: Path) -> list[dict[str, Any]]:
    """The control questions: each item's `mirror_of` question (from `docs`/../qa.jsonl) with the
    item's own id, answerability and gold, so both are scored alike. An item whose mirror is not
    found has no control."""
    path = docs.parent / "qa.jsonl"
    if not path.is_file():
        return []
    same: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            same[item["id"]] = {"question": item["question"], "lang": item["lang"]}
    out: list[dict[str, Any]] = []
    for q in questions:
        mirror = same.get(q.get("mirror_of") or "")
        if mirror is not None:
            out.append({"id": q["id"], "lang": mirror["lang"], "question": mirror["question"],
                        "answerable": q["answerable"], "gold": q["gold"],
                        "direction": direction(q)})  # fmt: skip
    return out


def gate_record(settings: Settings, readings: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """Both gates' settings and each question's readings: the bridge's
    (assistant/retrieve/crosslang/bridge.py; none for a question nothing of which translates)
    and the space's, `space_fired`, `space_best_other`, `space_best_same`
    (assistant/retrieve/crosslang/space.py; none where the side is off)."""
    cfg = settings.retrieve
    return {
        "bilingual": cfg.bilingual,
        "bilingual_weight": cfg.bilingual_weight,
        "bilingual_weight_closed": cfg.bilingual_weight_closed,
        "bilingual_margin": cfg.bilingual_margin,
        "bilingual_held": cfg.bilingual_held,
        "bilingual_evidence": cfg.bilingual_evidence,
        "bilingual_dense_gate": cfg.bilingual_dense_gate,
        "bilingual_dense_margin": cfg.bilingual_dense_margin,
        "bilingual_dense_margin_en": cfg.bilingual_dense_margin_en,
        "multilingual_model": settings.embed.multilingual_model,
        "crosslang_weight": cfg.crosslang_weight,
        "crosslang_margin": cfg.crosslang_margin,
        "crosslang_reserve": cfg.crosslang_reserve,
        "crosslang_place": cfg.crosslang_place,
        "crosslang_evidence": cfg.crosslang_evidence,
        "opened": sum(1 for r in readings.values() if r.get("open")),
        "questions": {qid: dict(r) for qid, r in readings.items()},
    }
