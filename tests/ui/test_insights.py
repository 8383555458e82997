"""The admin view's figures: pure functions over question records, and the same figures from a
real ledger checked against counts the test computes with its own SQL."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from core.config import Settings
from core.types import Answer, Citation, QuestionRecord
from store.ledger import Ledger
from ui.admin import insights

DAY = 86_400.0


def record(i: int, question: str, mode: str = "generated", rating: int | None = None,
           day: int = 0, chunks: tuple[str, ...] = (), first_token: float = 100.0
           ) -> QuestionRecord:
    timings = json.dumps({"retrieve": 10.0, "first_token": first_token, "total": 900.0})
    return QuestionRecord(i, "ann", question, mode, chunks, timings, day * DAY + i, rating)


def test_per_day_counts_questions_by_language() -> None:
    rows = [record(1, "How many days of leave?"), record(2, "年假有几天？"),
            record(3, "Travel rates?", day=1), record(4, "差旅标准？", day=1),
            record(5, "差旅住宿？", day=1)]
    assert insights.per_day(rows) == [("1970-01-01", "en", 1), ("1970-01-01", "zh", 1),
                                      ("1970-01-02", "en", 1), ("1970-01-02", "zh", 2)]


def test_summary_rates_and_latency() -> None:
    rows = [record(i, f"q{i}", mode="abstained" if i < 3 else "generated",
                   rating=1 if i == 4 else -1 if i == 5 else None, first_token=100.0 * i)
            for i in range(1, 11)]
    out = insights.summary(rows)
    assert out["questions"] == 10 and out["abstention_rate"] == 0.2
    assert (out["thumbs_up"], out["thumbs_down"]) == (1, 1)
    assert out["latency_ms"]["first_token"] == {"p50": 550.0, "p95": 955.0}  # type: ignore[index]


def test_most_and_never_cited_documents() -> None:
    rows = [record(1, "a", chunks=("c1", "c2")), record(2, "b", chunks=("c2",)),
            record(3, "c", chunks=("gone",))]
    most, never = insights.cited_documents(rows, {"c1": "leave", "c2": "leave", "c3": "travel"},
                                           ["leave", "travel", "pay"])
    assert most == [("leave", 2)] and never == ["pay", "travel"]


def test_knowledge_gaps_group_near_duplicates_most_frequent_first() -> None:
    rows = [record(1, "Is there a company gym?", mode="abstained"),
            record(2, "is there a gym at the company", mode="abstained", day=1),
            record(3, "How do I expense a bicycle?", rating=-1),
            record(4, "Is there a company gym", mode="abstained", day=2),
            record(5, "How many days of leave?", rating=1)]
    gaps = insights.knowledge_gaps(rows, notes={})
    assert [(g.question, g.count) for g in gaps] == [("Is there a company gym?", 3),
                                                      ("How do I expense a bicycle?", 1)]
    assert gaps[0].abstained == 3 and gaps[1].thumbs_down == 1
    again = insights.knowledge_gaps(rows[:1], notes={gaps[0].key: "add the facilities guide"})
    assert again[0].key == gaps[0].key and again[0].note == "add the facilities guide"


def test_gaps_csv_neutralises_formulas() -> None:
    rows = [record(1, "=HYPERLINK(\"http://x\")", mode="abstained")]
    table = list(csv.reader(io.StringIO(insights.gaps_csv(insights.knowledge_gaps(rows)))))
    assert table[0] == list(insights.GAP_COLUMNS)
    assert table[1][1].startswith("'=")


def test_figures_from_a_real_ledger_equal_its_own_counts(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    try:
        ids = []
        for i, (question, mode) in enumerate([("Is there a gym?", "abstained"),
                                              ("年假几天？", "generated"),
                                              ("Is there a gym", "abstained"),
                                              ("Travel rate?", "fallback")]):
            cited = [Citation(1, "x.pdf", 1, "", "q", f"c{i}")] if mode == "generated" else []
            answer = Answer("a", mode=mode, citations=cited, timings_ms={"first_token": 50.0 * i})
            ids.append(ledger.record_question("ann", question, answer))
        ledger.replace_feedback(ids[1], "ann", -1, "wrong")
        ledger.replace_feedback(ids[1], "ann", 1, "fine after all")  # the latest rating counts
        ledger.replace_feedback(ids[3], "ann", -1, "")
        rows = ledger.question_records()
        db = ledger.db
        count = db.execute("SELECT count(*) FROM questions").fetchone()[0]
        abstained = db.execute(
            "SELECT count(*) FROM questions WHERE mode = 'abstained'").fetchone()[0]
        down = db.execute("SELECT count(*) FROM feedback WHERE rating = -1").fetchone()[0]
        out = insights.summary(rows)
        assert out["questions"] == count == 4
        assert out["abstention_rate"] == round(abstained / count, 3)
        assert out["thumbs_down"] == down == 1 and out["thumbs_up"] == 1
        gaps = insights.knowledge_gaps(rows)
        assert [(g.count, g.abstained, g.thumbs_down) for g in gaps] == [(2, 2, 0), (1, 0, 1)]
        ledger.set_gap_note(gaps[0].key, "add the facilities guide", "alice")
        assert insights.knowledge_gaps(rows, ledger.gap_notes())[0].note.startswith("add")
        assert rows[1].chunk_ids == ("c1",)
    finally:
        ledger.close()


def test_the_gaps_an_admin_sees_and_downloads_carry_personal_numbers_masked(
        tmp_path: Path) -> None:
    """The ledger a store opens (privacy.mask on by default) keeps the question log masked, so
    the knowledge gaps, their notes and their CSV show no ID, phone, card or e-mail."""
    numbers = ["11010519491231002X", "13812345678", "4111 1111 1111 1111", "zhang.san@corp.cn"]
    ledger = Ledger(tmp_path / "ledger.sqlite", mask=Settings().privacy.mask)
    try:
        asked = ["我的身份证11010519491231002X能报销吗？", "Call me on 13812345678 about leave",
                 "Card 4111 1111 1111 1111 was charged twice (Article 12, 800元)"]
        for question in asked:
            ledger.record_question("ann", question, Answer("", mode="abstained"))
        gaps = insights.knowledge_gaps(ledger.question_records())
        ledger.set_gap_note(gaps[0].key, "ask zhang.san@corp.cn", "alice")
        gaps = insights.knowledge_gaps(ledger.question_records(), ledger.gap_notes())
        shown = insights.gaps_csv(gaps) + json.dumps(insights.gap_rows(gaps), ensure_ascii=False)
    finally:
        ledger.close()
    assert [n for n in numbers if n in shown] == []
    assert all(masked in shown for masked in ("**************002X", "*******5678",
                                               "**** **** **** 1111", "z***@corp.cn"))
    assert "Article 12, 800元" in shown  # policy numbers stay
