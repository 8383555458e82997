"""`kb audit ...`: check the audit trail's chain, export it, prune it.

    kb audit verify                       # exit 1 naming the first edited, deleted or moved record
    kb audit export --since 2026-01-01 --format csv > audit.csv
    kb audit prune                        # older than audit.keep_days, through a checkpoint
"""

from __future__ import annotations

import sys

import click

from core.config import Settings
from ui.audit import AuditTrail, cli_actor, export_lines, parse_when
from ui.cli.common import with_settings
from ui.wiring import ledger_for


@click.group("audit")
def audit_group() -> None:
    """The audit trail: who signed in, changed access, uploaded, deleted, viewed, exported."""


@audit_group.command("verify")
@with_settings
def audit_verify(settings: Settings) -> None:
    """Check every record's hash and link; exit 1 naming the first bad record.

    \b
    kb audit verify
    """
    with ledger_for(settings) as ledger:
        check = ledger.verify_audit()
        checkpoint = ledger.audit_checkpoint()
    start = (f"from the checkpoint after record {checkpoint['seq']} (pruned by "
             f"{checkpoint['actor']})" if checkpoint else "from the first record")
    if not check.ok:
        click.echo(f"audit trail BROKEN at record {check.bad_seq}: {check.problem} "
                   f"({check.records} records before it verified, {start})", err=True)
        sys.exit(1)
    click.echo(f"audit trail ok: {check.records} records verified {start}; head "
               f"{check.head_seq} {check.head_hash}")


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
