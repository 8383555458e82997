"""`kb prune`: a retention pass now (store/retention.py): every kind of record past its limit in
`[retention]` removed, the audit trail pruned to `audit.keep_days`, text written before masking
was on masked; people on legal hold keep theirs.

    kb prune
"""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from core.config import Settings
from store.retention import prune_pass, report_lines
from ui.audit import cli_actor, head_text
from ui.cli.common import with_settings
from ui.wiring import ledger_for


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
