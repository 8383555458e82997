"""/metrics: counters and histograms per process, one log line per question and file."""

from __future__ import annotations

import json
import logging

import pytest

from core.types import Answer, Citation, FileOutcome, IngestReport
from ui.metrics import Metrics


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return value or 0.0


def test_answers_are_counted_timed_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    metrics = Metrics()
    answer = Answer("Five days [1].", citations=[Citation(1, "leave.pdf", 2, "", "5 days", "c1")],
                    timings_ms={"retrieve": 12.0, "first_token": 300.0, "total": 900.0},
                    question_id=7)
    with caplog.at_level(logging.INFO, logger="kb.events"):
        metrics.answered(answer, "en", via="api", user="bob")
        metrics.answered(Answer("No.", abstained=True, mode="abstained"), "zh", via="app")
    assert sample(metrics, "kb_questions_total", mode="generated", lang="en", via="api") == 1
    assert sample(metrics, "kb_questions_total", mode="abstained", lang="zh", via="app") == 1
    assert sample(metrics, "kb_stage_seconds_count", stage="first_token") == 1
    assert sample(metrics, "kb_stage_seconds_sum", stage="total") == pytest.approx(0.9)
    line = json.loads(caplog.records[0].getMessage().removeprefix("question "))
    assert line == {"id": 7, "user": "bob", "via": "api", "lang": "en", "mode": "generated",
                    "citations": 1, "verified": 1,
                    "ms": {"retrieve": 12.0, "first_token": 300.0, "total": 900.0}}
    assert b"kb_questions_total" in metrics.render()


def test_ingestion_runs_count_files_by_outcome() -> None:
    metrics = Metrics()
    metrics.ingested(IngestReport([FileOutcome("a.pdf", "ingested", chunks=3),
                                   FileOutcome("b.doc", "failed", "unsupported", "legacy .doc")]))
    assert sample(metrics, "kb_ingest_runs_total") == 1
    assert sample(metrics, "kb_ingest_files_total", outcome="failed") == 1


@pytest.mark.parametrize("mask", [True, False])
def test_log_lines_carry_personal_numbers_masked(caplog: pytest.LogCaptureFixture,
                                                 mask: bool) -> None:
    """privacy.mask (on by default): a user named by an e-mail address and a file named with a
    phone number reach the log masked; the numbers of the line stay numbers."""
    metrics = Metrics(mask=mask)
    with caplog.at_level(logging.INFO, logger="kb.events"):
        metrics.answered(Answer("Yes.", question_id=13812345678), "en", via="api",
                         user="zhang.san@corp.example.cn")
        metrics.ingested(IngestReport([FileOutcome("报销-13812345678.pdf", "ingested",
                                                   chunks=3)]))
    question, file = (json.loads(r.getMessage().split(" ", 1)[1]) for r in caplog.records)
    assert question["id"] == 13812345678
    if mask:
        assert question["user"] == "z***@corp.example.cn"
        assert file["path"] == "报销-*******5678.pdf"
    else:
        assert question["user"] == "zhang.san@corp.example.cn"
        assert file["path"] == "报销-13812345678.pdf"
