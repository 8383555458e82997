"""What an operator watches: `/metrics` in Prometheus text format, and one structured log line per
question and per ingested file (personal numbers masked: core/privacy.py). Each app process has
its own registry (`Metrics()`), so tests and several apps in one process do not mix their counts.

    metrics = Metrics()
    metrics.answered(answer, lang="en", via="app")
    metrics.ingested(report)
    metrics.render() -> b"# HELP kb_questions_total ..."
"""

from __future__ import annotations

import json
import logging
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from core.privacy import mask_values
from core.types import Answer, IngestReport

logger = logging.getLogger("kb.events")

# Seconds: a question's stages run from milliseconds (retrieval) to a minute (a long answer).
BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """The counters of one app process; with `mask` (privacy.mask), its log lines carry
    personal numbers masked (core/privacy.py)."""

    def __init__(self, mask: bool = True) -> None:
        self.mask = mask
        self.registry = CollectorRegistry()
        r = self.registry
        self.questions = Counter("kb_questions", "Questions answered, by mode and language",
                                 ["mode", "lang", "via"], registry=r)
        self.errors = Counter("kb_errors", "Questions that ended in an error, by kind",
                              ["kind", "via"], registry=r)
        self.stage = Histogram("kb_stage_seconds", "Time per stage of a question",
                               ["stage"], buckets=BUCKETS, registry=r)
        self.in_flight = Gauge("kb_questions_in_flight", "Questions being answered now",
                               registry=r)
        self.ingest_runs = Counter("kb_ingest_runs", "Ingestion and re-index runs", registry=r)
        self.files = Counter("kb_ingest_files", "Files per outcome of ingestion runs",
                             ["outcome"], registry=r)
        self.login_failures = Counter("kb_login_failures", "Refused logins", registry=r)
        self.busy = Counter("kb_busy", "Questions refused at once: ui.queue_depth were taken",
                            ["via"], registry=r)
        # several app processes share a ledger; compare the two (server.py sets their functions)
        self.snapshot_generation = Gauge(
            "kb_snapshot_generation", "Ledger generation this process answers from", registry=r)
        self.ledger_generation = Gauge(
            "kb_ledger_generation", "Ledger generation now (any process's writes)", registry=r)
        # the audit trail's head, for monitoring to keep outside the server
        # (`kb audit verify --expect SEQ:HASH`; server.py sets their functions)
        self.audit_head_seq = Gauge(
            "kb_audit_head_seq", "Number of the audit trail's newest record", registry=r)
        self.audit_head_hash = Gauge(
            "kb_audit_head_hash_prefix", "First 12 hex digits of the newest audit record's "
            "hash, as a number (printf '%012x')", registry=r)

    def answered(self, answer: Answer, lang: str, via: str, user: str = "") -> None:
        """Count a finished answer and log one line about it."""
        mode = "abstained" if answer.abstained else answer.mode
        self.questions.labels(mode=mode, lang=lang, via=via).inc()
        for stage, ms in answer.timings_ms.items():
            self.stage.labels(stage=stage).observe(ms / 1000)
        logger.info("question %s", self._line({
            "id": answer.question_id, "user": user, "via": via, "lang": lang, "mode": mode,
            "citations": len(answer.citations),
            "verified": sum(1 for c in answer.citations if c.supported),
            "ms": {k: round(v, 1) for k, v in answer.timings_ms.items()},
        }))

    def failed(self, kind: str, via: str) -> None:
        self.errors.labels(kind=kind, via=via).inc()

    def ingested(self, report: IngestReport) -> None:
        """Count a run's files and log one line per file."""
        self.ingest_runs.inc()
        for outcome in report.outcomes:
            self.files.labels(outcome=outcome.outcome).inc()
            logger.info("file %s", self._line({
                "run": report.run_id, "path": outcome.path, "outcome": outcome.outcome,
                "status": outcome.status, "reason": outcome.reason, "chunks": outcome.chunks,
            }))

    def _line(self, fields: dict[str, Any]) -> str:
        """A log line's JSON, its strings masked with `mask`."""
        return json.dumps(mask_values(fields) if self.mask else fields, ensure_ascii=False)

    def render(self) -> bytes:
        return generate_latest(self.registry)
