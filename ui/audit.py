"""The audit trail as the app and the CLI write it: `record` writes an event at once (sign-ins,
account and token changes, uploads, deletes, runs, exports), `soon` hands it to a writer thread
that chains a batch at a time (source views, on a reader's path: the request only appends to a
list). The trail itself, chained by hash and verified, is the ledger's (`store/ledger/audit.py`).

    trail = AuditTrail(ledger, settings.audit)
    trail.record("token.create", "cli:root", object="alice", days=30)
    trail.soon("source.view", "alice", object="c9f2...", address="10.0.0.7", kind="page")
    trail.close()   # writes what is still waiting

Details are never secrets: no passwords, tokens, cookies or keys reach this module.
"""

from __future__ import annotations

import csv
import dataclasses
import getpass
import hashlib
import io
import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from core.config import Settings
from core.errors import KbError
from core.settings.auth import AuditSettings
from core.types import IngestReport
from store.ledger import AuditEntry, AuditRecord, Ledger

logger = logging.getLogger(__name__)

# Settings left out of the digest `kb serve` records at start (they are secrets).
SECRET_KEYS = {("store", "token"), ("ingest", "pdf_passwords"), ("ui", "metrics_token"),
               ("store", "ledger_url")}


def cli_actor() -> str:
    """Who runs a `kb` command: "cli:<os user>"."""
    try:
        return "cli:" + getpass.getuser()
    except (KeyError, OSError):
        return "cli:?"


def settings_digest(settings: Settings) -> tuple[str, dict[str, Any]]:
    """The SHA-256 of the settings without their secrets, and those settings as JSON values."""
    shown: dict[str, Any] = {}
    for section in dataclasses.fields(settings):
        value = getattr(settings, section.name)
        if not dataclasses.is_dataclass(value):
            continue
        for f in dataclasses.fields(value):
            if (section.name, f.name) not in SECRET_KEYS:
                shown[f"{section.name}.{f.name}"] = getattr(value, f.name)
    text = json.dumps(shown, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest(), json.loads(text)


def run_details(report: IngestReport) -> dict[str, Any]:
    """What an ingest, re-index or delete run's record carries: its run id and counts.

    run_details(IngestReport(run_id=7)) -> {"run_id": 7, "ingested": 0, ..., "queued": 0}
    """
    return {"run_id": report.run_id, **report.counts, "queued": report.queued}


def run_outcome(report: IngestReport) -> str:
    """"ok", or "partial" when some file failed."""
    return "partial" if report.counts.get("failed") else "ok"


class AuditTrail:
    """Writes events to the ledger's audit trail; safe to share between threads. With
    `audit.enabled = false` it writes nothing."""

    def __init__(self, ledger: Ledger, settings: AuditSettings | None = None,
                 flush_s: float = 0.2) -> None:
        self.ledger = ledger
        self.settings = settings or AuditSettings()
        self.flush_s = flush_s
        self._waiting: list[AuditEntry] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._writer: threading.Thread | None = None
        self._closed = False

    def record(self, event: str, actor: str, *, object: str = "", outcome: str = "ok",
               address: str = "", **details: Any) -> None:
        """Chain the event now (and whatever `soon` left waiting, first)."""
        if not self.settings.enabled:
            return
        entry = AuditEntry(time.time(), actor, address, event, object, outcome, details)
        with self._lock:
            batch, self._waiting = [*self._waiting, entry], []
        self._write(batch)

    def soon(self, event: str, actor: str, *, object: str = "", outcome: str = "ok",
             address: str = "", **details: Any) -> None:
        """Chain the event within `flush_s`, from the writer thread (a reader's request only
        appends it to a list)."""
        if not self.settings.enabled:
            return
        entry = AuditEntry(time.time(), actor, address, event, object, outcome, details)
        with self._lock:
            self._waiting.append(entry)
            if self._writer is None and not self._closed:
                self._writer = threading.Thread(target=self._run, name="audit-writer",
                                                daemon=True)
                self._writer.start()
        if self._closed:
            self.flush()

    def flush(self) -> None:
        """Write what is waiting now."""
        with self._lock:
            batch, self._waiting = self._waiting, []
        self._write(batch)

    def close(self) -> None:
        """Stop the writer thread after it wrote what is waiting."""
        self._closed = True
        self._wake.set()
        if self._writer is not None:
            self._writer.join(timeout=10)
        self.flush()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self.flush_s)
            self.flush()

    def _write(self, batch: list[AuditEntry]) -> None:
        if not batch:
            return
        try:
            self.ledger.append_audit(batch)
        except Exception as exc:  # noqa: BLE001  the request or the writer thread goes on
            logger.error("audit trail: %d event(s) not recorded (%s): %s", len(batch),
                         ", ".join(sorted({e.event for e in batch})), exc)

    def prune(self, actor: str, address: str = "", keep_days: float | None = None) -> int:
        """Delete the records older than `keep_days` (default audit.keep_days; 0 keeps all)
        through a checkpoint; how many went."""
        days = self.settings.keep_days if keep_days is None else keep_days
        if days <= 0:
            return 0
        self.flush()
        pruned = self.ledger.prune_audit(time.time() - days * 86400, actor, address)
        if pruned:
            logger.info("audit trail: %d records older than %g days pruned", pruned, days)
        return pruned


# --- export: `kb audit export` and the admin tab's CSV ------------------------------------
EXPORT_FIELDS = ("seq", "time", "actor", "address", "event", "object", "outcome", "details",
                 "prev", "hash")


def export_row(record: AuditRecord) -> dict[str, Any]:
    """A record as exported: its fields, the time also in UTC ISO 8601."""
    row = record.as_dict()
    row["time"] = datetime.fromtimestamp(record.at, UTC).isoformat(timespec="microseconds")
    return {k: row[k] for k in EXPORT_FIELDS} | {"at": record.at}


def csv_cell(value: object) -> object:
    """A text cell a spreadsheet would take for a formula, with a leading quote; other values
    as they are (OWASP's rule: a first character of = + - @, tab or carriage return).

    csv_cell("=1+1") -> "'=1+1";  csv_cell("-2+3") -> "'-2+3";  csv_cell(-2) -> -2
    """
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def export_lines(records: Iterable[AuditRecord], fmt: str) -> Iterator[str]:
    """The records as JSON lines ("jsonl") or CSV with a header ("csv"), line by line; each
    carries its hash, so an export can be checked against the trail (JSON lines exactly; a
    CSV text cell that a spreadsheet would run as a formula has a leading quote, `csv_cell`)."""
    if fmt == "jsonl":
        for record in records:
            yield json.dumps(export_row(record), ensure_ascii=False) + "\n"
        return
    if fmt != "csv":
        raise ValueError(f"export format {fmt!r}: use jsonl or csv")
    buffer = io.StringIO()
    # CRLF, as RFC 4180 has it: a field holding a CR or an LF is then quoted (a lone CR left
    # bare would start a row in a spreadsheet)
    writer = csv.DictWriter(buffer, fieldnames=[*EXPORT_FIELDS, "at"], lineterminator="\r\n")
    writer.writeheader()
    for record in records:
        writer.writerow({key: csv_cell(value) for key, value in export_row(record).items()})
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def head_text(seq: int, digest: str) -> str:
    """The chain's head as `kb audit verify --expect` takes it: head_text(7, "9f2c…") ->
    "7:9f2c…"."""
    return f"{seq}:{digest}"


def parse_head(text: str) -> tuple[int, str]:
    """A head kept outside the server, "SEQ:HASH" (the hash, or at least its first 12 hex
    digits), as (seq, hash); ValueError naming the form otherwise.

    parse_head("583:9F2C41D07AB3") -> (583, "9f2c41d07ab3")
    """
    seq, _, digest = text.strip().partition(":")
    digest = digest.lower()
    if not (seq.isascii() and seq.isdigit() and 12 <= len(digest) <= 64
            and all(c in "0123456789abcdef" for c in digest)):
        raise ValueError(f"{text!r}: give the head as SEQ:HASH (the record's number, a colon and "
                         "at least 12 hex digits of its hash), as `kb audit verify` prints it")
    return int(seq), digest


def parse_when(text: str) -> float | None:
    """A --since/--until value as epoch seconds: a date, a date and time (UTC unless it names
    its zone), or epoch seconds; None for "".

    parse_when("2026-01-31") -> 1769817600.0
    """
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise KbError(f"{text!r}: not a date; use 2026-01-31, 2026-01-31T08:00 or epoch "
                      "seconds") from exc
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
