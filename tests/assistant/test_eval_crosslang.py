"""`kb eval` of a cross-language set (issue 29): each question's mirror (`mirror_of`) read from
the set beside the documents as the control, the directions reported apart, the gate recorded;
on ../shared/eval/crosslang, no figure of a direction more than one question's worth below
bench/eval_crosslang.json (`assistant/evaluation/record.py`), and the control (the same facts
asked in the documents' language) losing no question's window against its record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assistant.evaluation.crosslang import direction, gate_record, is_crosslang, mirrors
from assistant.evaluation.evaluate import METRICS, run_eval
from assistant.evaluation.record import check
from ui.wiring import open_services

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "bench" / "eval_crosslang.json"


def test_mirrors_are_the_same_facts_asked_in_the_documents_language(tmp_path: Path) -> None:
    same = tmp_path / "same"
    (same / "docs").mkdir(parents=True)
    (same / "qa.jsonl").write_text(
        json.dumps({"id": "z1", "lang": "zh", "question": "年休假几天？", "answer": "never read",
                    "answerable": True, "gold": []}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    gold = [{"file": "年休假条例.docx", "page": None, "quote": "年休假5天"}]
    questions = [
        {"id": "e1", "lang": "en", "doc_lang": "zh", "mirror_of": "z1", "question": "Days?",
         "answerable": True, "gold": gold},
        {"id": "e2", "lang": "en", "doc_lang": "zh", "mirror_of": "gone", "question": "X?",
         "answerable": False, "gold": []},
    ]  # fmt: skip
    assert is_crosslang(questions) and not is_crosslang([{"id": "z1", "lang": "zh"}])
    assert direction(questions[0]) == "en→zh"
    assert mirrors(questions, same / "docs") == [
        {"id": "e1", "lang": "zh", "question": "年休假几天？", "answerable": True, "gold": gold,
         "direction": "en→zh"}
    ]  # fmt: skip


def test_the_gate_is_recorded_with_each_questions_readings(make_settings) -> None:  # type: ignore[no-untyped-def]
    readings = {"e1": {"open": 1.0, "weight": 2.0}, "e2": {}}
    record = gate_record(make_settings(retrieve={"bilingual_dense_gate": False}), readings)
    assert record["opened"] == 1 and record["questions"]["e1"]["weight"] == 2.0
    assert record["bilingual"] is True and "bilingual_held" in record
    assert record["bilingual_dense_gate"] is False
    assert record["multilingual_model"] == "multilingual-e5-small"
    assert record["crosslang_margin"] == -0.06 and record["crosslang_weight"] == 1.75


@pytest.mark.slow
def test_crosslang_eval_by_direction_beside_its_control(make_settings, shared: Path) -> None:  # type: ignore[no-untyped-def]
    report = run_eval(
        make_settings(),  # both sides on by default
        shared / "eval" / "crosslang",
        open_services,
        baseline=False,
        docs=shared / "eval" / "public2" / "docs",
    )
    record = json.loads(RECORDED.read_text("utf-8"))
    print(json.dumps({k: report[k] for k in ("host", "directions", "ours")}, indent=1))
    assert sorted(report["directions"]) == ["en→zh", "zh→en"]

    def side(of: dict[str, Any], name: str) -> dict[str, Any]:
        return {way: sides[name] for way, sides in of["directions"].items()}

    # the control (the same facts asked in the documents' language) loses no window (strict)
    outcomes = (report["outcomes"]["control"], record["outcomes"]["control"])
    moved = check(side(report, "control"), side(record, "control"), ("in_window",), outcomes,
                  f"{RECORDED.name}, the control")  # fmt: skip
    assert not moved, moved
    outcomes = (report["outcomes"]["ours"], record["outcomes"]["ours"])
    gated = (*METRICS, "refused")
    failed = check(side(report, "cross"), side(record, "cross"), gated, outcomes, RECORDED.name)
    assert not failed, failed
    assert set(report["gate"]["questions"]) == {f"pc-{x}{n:02d}" for x in ("en", "zh")
                                                for n in range(1, 21)}  # fmt: skip
    # the space's gate read for every question: the sample has passages of both languages
    assert all("space_fired" in r for r in report["gate"]["questions"].values())
