"""What kb keeps about a person, from the command line, on SQLite and PostgreSQL: `kb users
export` gives their data as JSON (no secrets, personal numbers masked); `kb users hold` keeps it
through `kb prune` and refuses `kb users erase` until `kb users release`; `kb users erase`
leaves nothing of theirs but the audit records naming them, redacted (nor the admin tab's
downloads, which may hold their questions), and `kb audit verify` still passes, through a head
kept before; each step is in the audit trail."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from core.types import Answer
from store.ledger import Ledger
from ui.cli import main

DAY = 86400.0


def kb(args: list[str], store: Path, ledger_url: str, stdin: str | None = None,
       **env: str) -> Any:
    if ledger_url:
        env["KB_STORE_LEDGER_URL"] = ledger_url
    return CliRunner().invoke(main, [*args, "--store", str(store)], input=stdin, env=env)


def with_ledger(store: Path, ledger_url: str) -> Ledger:
    return Ledger(ledger_url or store / "ledger.sqlite", mask=True)


def test_export_hold_erase_and_verify(tmp_path: Path, ledger_url: str) -> None:
    store = tmp_path / "store"
    for name in ("alice", "bob"):
        result = kb(["users", "add", name, "--password-stdin"], store, ledger_url,
                    f"{name}-password\n")
        assert result.exit_code == 0, result.output
    ledger = with_ledger(store, ledger_url)
    try:
        for name in ("alice", "bob"):
            qid = ledger.record_question(name, f"{name}'s sick leave? call 13812345678",
                                         Answer("12 days"))
            ledger.replace_feedback(qid, name, -1, "too short")
            ledger.db.execute("UPDATE questions SET created_at = ? WHERE id = ?",
                              (time.time() - 400 * DAY, qid))
    finally:
        ledger.close()

    result = kb(["users", "export", "alice"], store, ledger_url)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["person"] == "alice" and data["users"][0]["groups"] == ["all"]
    assert data["questions"][0]["question"] == "alice's sick leave? call *******5678"
    assert data["feedback"][0]["comment"] == "too short"
    assert "password_hash" not in result.output and "api_token_hash" not in result.output
    assert {r["event"] for r in data["audit"]} == {"user.add"}
    assert data["questions"][0]["created_at_utc"].endswith("+00:00")

    assert kb(["users", "hold", "bob", "--why", "case 2026-14"], store, ledger_url).exit_code == 0
    held = kb(["users", "holds"], store, ledger_url)
    assert "bob" in held.output and "case 2026-14" in held.output and "1 on hold" in held.output
    result = kb(["prune"], store, ledger_url, KB_RETENTION_QUESTIONS_DAYS="30",
                KB_RETENTION_GAPS_DAYS="30")
    assert result.exit_code == 0, result.output
    assert "questions" in result.output and "1 removed" in result.output  # alice's, not bob's
    refused = kb(["users", "erase", "bob", "--yes"], store, ledger_url)
    assert refused.exit_code != 0 and "legal hold" in refused.output
    assert kb(["users", "release", "bob"], store, ledger_url).exit_code == 0

    head = kb(["audit", "verify"], store, ledger_url).output.split("head ")[-1].strip()
    download = store / "cache" / "exports" / "gaps.csv"  # an admin's download of the log
    download.parent.mkdir(parents=True, exist_ok=True)
    download.write_text("bob's sick leave? call *******5678\n", encoding="utf-8")
    result = kb(["users", "erase", "bob", "--yes"], store, ledger_url)
    assert result.exit_code == 0, result.output
    assert "questions 1" in result.output and "users 1" in result.output
    assert "exports 1" in result.output and not download.exists()
    verified = kb(["audit", "verify", "--expect", head], store, ledger_url)
    assert verified.exit_code == 0, verified.output
    left = json.loads(kb(["users", "export", "bob"], store, ledger_url).output)
    assert left["users"] == left["questions"] == left["feedback"] == []
    assert [(r["event"], r["details"]) for r in left["audit"]][-1][0] == "user.erase"
    assert all(set(r["details"]) == {"redacted_by"} for r in left["audit"][:-1])

    ledger = with_ledger(store, ledger_url)
    try:
        events = [(r.event, r.object) for r in ledger.audit_records()]
        assert {("user.export", "alice"), ("user.hold", "bob"), ("user.release", "bob"),
                ("user.erase", "bob"), ("retention.pass", "ledger")} <= set(events)
        assert not any(ledger.person_counts("bob").values())
    finally:
        ledger.close()


def test_a_hold_needs_a_reason_and_a_release_a_hold(tmp_path: Path) -> None:
    store = tmp_path / "store"
    result = kb(["users", "hold", "carol", "--why", " "], store, "")
    assert result.exit_code != 0 and "needs its reason" in result.output
    result = kb(["users", "release", "carol"], store, "")
    assert result.exit_code != 0 and "not on legal hold" in result.output
