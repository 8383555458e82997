"""`kb docs`: the documents of the store, with their status and dates; those due for review or
about to expire (`--due`); an admin's dates on one of them (`kb docs set`). What the dates mean:
core/policy_dates.py; how set dates are kept: ingest/dates.py.

    kb docs --json
    kb docs --due --within 60
    kb docs set 差旅费管理办法-2023.pdf --expires 2023-12-31
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import click

from core.config import Settings
from core.policy_dates import DUE_WITHIN_DAYS, date_note, due, out_of_force
from core.types import DocRecord
from ingest.dates import checked_dates, set_dates
from ingest.pipeline import list_documents
from ui.audit import AuditTrail, cli_actor
from ui.cli.common import shown, with_settings
from ui.wiring import store_for


def _record_json(record: DocRecord, today: date) -> dict[str, Any]:
    meta = record.meta
    return {
        "id": meta.id,
        "path": meta.path,
        "root": meta.root,
        "title": meta.title,
        "lang": meta.lang,
        "groups": list(meta.groups),
        "status": record.status,
        "reason": record.reason,
        "chunks": record.chunk_count,
        "sha256": meta.sha256,
        "size": meta.size,
        "version": meta.version,
        "effective_date": meta.effective_date,
        "review_by": meta.review_by,
        "expires": meta.expires,
        "dates_set_by_admin": list(meta.admin_dates),
        "in_force": not out_of_force(meta, today),
        "date_note": date_note(meta, today),
        "series": meta.series,
        "updated_at": record.updated_at,
    }


@click.group("docs", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON array.")
@click.option("--due", is_flag=True, help="Only those due for review or about to expire.")
@click.option("--within", default=DUE_WITHIN_DAYS, show_default=True, type=click.IntRange(min=0),
              help="With --due: days ahead.")
@with_settings
def docs_group(settings: Settings, as_json: bool, due: bool, within: int) -> None:
    """List documents: status, chunks, groups, and a reason (a failure, or its dates: not in
    force yet, expired, review overdue).

    \b
    kb docs
    kb docs --due --within 60     # review due or overdue, or expiring, within 60 days
    kb docs set leave.pdf --review-by 2027-06-30
    """
    if click.get_current_context().invoked_subcommand:
        return
    today = date.today()
    with store_for(settings) as store:
        records = list_documents(store)
    if due:
        _print_due(records, today, within, as_json)
        return
    rows = [_record_json(r, today) for r in records]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    for r in rows:
        why = shown("; ".join(x for x in (r["reason"], r["date_note"]) if x))
        click.echo(
            f"{r['id']}  {r['status']:<11} {r['chunks']:>5}  {','.join(r['groups']):<12} "
            f"{shown(r['path'])}{'  ' + why if why else ''}"
        )
    click.echo(f"{len(rows)} documents")


def _print_due(records: list[DocRecord], today: date, within: int, as_json: bool) -> None:
    found = due([r.meta for r in records], today, within)
    if as_json:
        click.echo(json.dumps(
            [{"id": d.meta.id, "path": d.meta.path, "what": d.what, "day": d.day,
              "days_left": d.days_left, "note": d.note} for d in found],
            ensure_ascii=False, indent=2))
        return
    for d in found:
        click.echo(f"{d.meta.id}  {d.note:<44} {shown(d.meta.path)}")
    click.echo(f"{len(found)} due within {within} days of {today.isoformat()}")


@docs_group.command("set")
@click.argument("doc")
@click.option("--effective", help="In force from this day (YYYY-MM-DD; \"\" clears it).")
@click.option("--review-by", "review_by", help="Review due by this day (YYYY-MM-DD; \"\" clears).")
@click.option("--expires", help="In force through this day (YYYY-MM-DD; \"\" clears it).")
@with_settings
def docs_set(settings: Settings, doc: str, effective: str | None, review_by: str | None,
             expires: str | None) -> None:
    """Set a document's dates (id, path or file name, as `kb delete` takes it). They are kept
    through re-ingests and re-indexes, unless the document's sidecar sets that key.

    \b
    kb docs set 差旅费管理办法-2023.pdf --expires 2023-12-31
    kb docs set leave.pdf --review-by 2027-06-30 --effective ""
    """
    dates = checked_dates({"effective": effective, "review_by": review_by, "expires": expires},
                          lambda key: "--" + key.replace("_", "-"))
    if not dates:
        raise click.UsageError("give at least one of --effective, --review-by, --expires")
    with store_for(settings) as store:
        record = set_dates(store, doc, dates)
        AuditTrail(store.ledger, settings.audit).record(
            "document.dates", cli_actor(), object=record.meta.path, address="local",
            doc_id=record.meta.id, **dates)
    meta = record.meta
    dated = ", ".join(f"{key} {value or '(none)'}" for key, value in (
        ("effective", meta.effective_date), ("review_by", meta.review_by),
        ("expires", meta.expires)))
    note = date_note(meta, date.today())
    click.echo(f"{shown(meta.path)}: {dated}" + (f" ({note})" if note else ""))
