"""`kb audit ...`: check the audit trail's chain, export it, prune it; and `kb prune`, a
retention pass now (store/retention.py): every kind of record past its limit in `[retention]`
removed, the audit trail pruned to `audit.keep_days`, text written before masking was on
masked; people on legal hold keep theirs.

    kb audit verify                       # exit 1 naming the first edited, deleted or moved record
    kb audit verify --expect 583:9f2c41d07ab3e6f0   # and the chain still passes through that head
    kb audit export --since 2026-01-01 --format csv > audit.csv
    kb audit prune                        # older than audit.keep_days, through a checkpoint
    kb prune --json                       # a retention pass
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import click

from core.config import Settings
from store.ledger import Ledger
from store.retention import prune_pass, report_lines
from ui.audit import AuditTrail, cli_actor, export_lines, head_text, parse_head, parse_when
from ui.cli.common import with_settings
from ui.wiring import ledger_for


@click.group("audit")
def audit_group() -> None:
    """The audit trail: who signed in, changed access, uploaded, deleted, viewed, exported."""


@audit_group.command("verify")
@click.option("--expect", default="", metavar="SEQ:HASH",
              help="A head kept outside the server (printed by verify, export and prune, or "
                   "from /metrics); the chain must still pass through it.")
@with_settings
def audit_verify(settings: Settings, expect: str) -> None:
    """Check every record's hash and link, and that the chain passes through the head stored
    at the last append and the one given; exit 1 naming the first bad record.

    \b
    kb audit verify
    kb audit verify --expect 583:9f2c41d07ab3e6f0
    """
    try:
        expected = parse_head(expect) if expect else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--expect") from exc
    with ledger_for(settings) as ledger:
        check = ledger.verify_audit(expected)
        checkpoint = ledger.audit_checkpoint()
    start = (f"from the checkpoint after record {checkpoint['seq']} (pruned by "
             f"{checkpoint['actor']})" if checkpoint else "from the first record")
    if not check.ok:
        click.echo(f"audit trail BROKEN at record {check.bad_seq}: {check.problem} "
                   f"({check.records} records before it verified, {start})", err=True)
        sys.exit(1)
    through = f", through {expect}" if expect else ""
    click.echo(f"audit trail ok: {check.records} records verified {start}{through}; head "
               f"{head_text(check.head_seq, check.head_hash)}")


def _show_head(ledger: Ledger) -> None:
    """The head after this command's record, on standard error, to be kept outside the
    server: a later `kb audit verify --expect` shows whether the chain still passes through."""
    head = head_text(*ledger.audit_head())
    click.echo(f"audit head {head} (keep it outside the server; later: kb audit verify "
               f"--expect {head})", err=True)


@audit_group.command("export")
@click.option("--since", default="", help="From this time on (2026-01-31, ISO time, epoch s).")
@click.option("--until", default="", help="Before this time.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl",
              show_default=True)
@with_settings
def audit_export(settings: Settings, since: str, until: str, fmt: str) -> None:
    """Write the records to standard output, with their hashes (the export is recorded too).

    \b
    kb audit export --since 2026-01-01 --until 2026-02-01 --format csv > january.csv
    """
    start, end = parse_when(since), parse_when(until)
    with ledger_for(settings) as ledger:
        count = 0
        for line in export_lines(ledger.audit_records(start, end), fmt):
            click.echo(line, nl=False)
            count += line.count("\n")
        AuditTrail(ledger, settings.audit).record(
            "audit.export", cli_actor(), object=fmt, address="local", since=since, until=until,
            lines=count)
        _show_head(ledger)


@audit_group.command("prune")
@click.option("--keep-days", type=float, default=None,
              help="Keep this many days (default: audit.keep_days).")
@with_settings
def audit_prune(settings: Settings, keep_days: float | None) -> None:
    """Delete records older than audit.keep_days, leaving a checkpoint the chain verifies from.

    \b
    kb audit prune --keep-days 365
    """
    with ledger_for(settings) as ledger:
        pruned = AuditTrail(ledger, settings.audit).prune(cli_actor(), "local", keep_days)
        click.echo(f"{pruned} audit records pruned")
        _show_head(ledger)


@click.command("prune")
@click.option("--json", "as_json", is_flag=True, help="Print the pass's report as JSON.")
@with_settings
def prune_command(settings: Settings, as_json: bool) -> None:
    """Remove what is kept past [retention]'s limits (a batch at a time: questions are answered
    meanwhile) and record the pass in the audit trail. `kb serve`, `kb worker` and `kb sync`
    run one every retention.every_hours.

    \b
    kb prune
    KB_RETENTION_QUESTIONS_DAYS=90 kb prune --json
    """
    with ledger_for(settings) as ledger:
        report = prune_pass(ledger, settings, cli_actor())
        head = head_text(*ledger.audit_head())
    for line in [json.dumps(asdict(report))] if as_json else report_lines(report):
        click.echo(line)
    click.echo(f"audit head {head} (keep it outside the server; later: kb audit verify "
               f"--expect {head})", err=True)
