"""`kb sync`: keep the folders of `[[sources]]` in step with the store (ingest/sync/folder.py), and
what `kb worker` runs between jobs (`SourceRunner`). Each pass that changes something goes to
the audit trail (`sync.run`, with every rename `sync.rename` and delete `sync.delete`), as does
one that changes the source's state (braked, failed, ok again).

    kb sync                          # each source when due, until stopped
    kb sync --once                   # every source once now; exit 1 if one braked or failed
    kb sync --confirm-deletes hr     # that source once now, its held-back deletes allowed
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import click

from core.config import Settings
from core.settings.sources import SourceSettings
from ingest.sync.folder import SyncReport, sync_source
from ingest.sync.schedule import checked_sources, keep_in_sync, run_due
from store.store import Store
from ui.audit import AuditTrail, cli_actor
from ui.cli.common import shown, with_settings
from ui.wiring import store_for

logger = logging.getLogger(__name__)


def record_pass(trail: AuditTrail, report: SyncReport, actor: str,
                confirmed: bool = False) -> None:
    """The pass in the audit trail: its renames and deletes, then the pass with its counts
    (a pass that changed nothing, not even the source's state, is left out)."""
    if not (report.eventful or confirmed):
        return
    name = report.source.name
    for old, new in report.renamed:
        trail.record("sync.rename", actor, object=f"{old} -> {new}"[:500], address="local",
                     source=name)
    for rel in report.deleted:
        trail.record("sync.delete", actor, object=rel[:500], address="local", source=name,
                     confirmed=confirmed)
    trail.record("sync.run", actor, object=name, outcome=report.state, address="local",
                 seen=report.seen, changed=report.changed, failed=report.failed,
                 skipped=len(report.skipped),
                 renamed=len(report.renamed), deleted=len(report.deleted),
                 pending_deletes=report.pending_deletes, reason=report.reason[:500],
                 confirmed=confirmed)


def describe_pass(report: SyncReport) -> str:
    """One line (more for renames, deletes, failures and skipped links) saying what a pass
    did; names escaped, so a file's name cannot make a line of its own."""
    lines = [f"  renamed   {shown(old)} -> {shown(new)}" for old, new in report.renamed]
    lines += [f"  deleted   {shown(rel)}" for rel in report.deleted]
    if report.ingest is not None:
        lines += [f"  {o.outcome:<9} {shown(o.path)}" + (f": {shown(o.reason)}" if o.reason
                                                         else "")
                  for o in report.ingest.outcomes if o.outcome in ("ingested", "updated",
                                                                    "failed", "skipped")]
    skipped = f", {len(report.skipped)} skipped" if report.skipped else ""
    lines.append(f"{report.source.name}: {report.state}, {report.seen} files seen, "
                 f"{report.changed} changed, {report.failed} failed{skipped}"
                 + (f": {shown(report.reason)}" if report.reason else ""))
    return "\n".join(lines)


class SourceRunner:
    """Runs the due sources of one store at `clock()` and records each pass; `kb worker` calls
    it between jobs."""

    def __init__(self, store: Store, settings: Settings,
                 clock: Callable[[], float] = time.time) -> None:
        self.store, self.settings, self.clock = store, settings, clock
        self.sources = checked_sources(settings)
        self.trail = AuditTrail(store.ledger, settings.audit)
        self.actor = cli_actor()

    def __call__(self) -> list[SyncReport]:
        reports = run_due(self.store, self.settings, self.clock(), self.sources)
        for report in reports:
            self.show(report)
        return reports

    def show(self, report: SyncReport, confirmed: bool = False, always: bool = False) -> None:
        """Record the pass in the audit trail and print what it did; a quiet pass (nothing
        changed, not even the state) is printed only when `always` (`--once`)."""
        record_pass(self.trail, report, self.actor, confirmed)
        if always or report.eventful:
            click.echo(describe_pass(report))
        else:
            logger.info("%s: nothing changed (%d files seen)", report.source.name, report.seen)


def _find(sources: tuple[SourceSettings, ...], name: str) -> SourceSettings:
    for source in sources:
        if source.name == name:
            return source
    known = ", ".join(s.name for s in sources) or "none: add [[sources]] to config.toml"
    raise click.UsageError(f"--confirm-deletes {name}: no such source (known: {known})")


@click.command("sync")
@click.option("--once", is_flag=True, help="Every source once now, then exit.")
@click.option("--confirm-deletes", "confirm", metavar="NAME",
              help="Run source NAME once now, deleting the files the brake held back.")
@with_settings
def sync_command(settings: Settings, once: bool, confirm: str | None) -> None:
    """Keep the folders of [[sources]] in step: new and changed files ingested, renamed ones
    followed, removed ones deleted (unless too many vanished at once: the brake).

    \b
    kb sync                          # each source when due, until stopped
    kb sync --once                   # every source once; exit 1 if one braked or failed
    kb sync --confirm-deletes hr     # allow the deletes the brake held back
    """
    sources = checked_sources(settings)
    if not sources:
        raise click.ClickException("no [[sources]] in the config: add one (see config.toml)")
    with store_for(settings) as store:
        runner = SourceRunner(store, settings)
        if confirm or once:
            chosen = [_find(sources, confirm)] if confirm else list(sources)
            reports = [sync_source(store, s, settings.sync.max_delete_share, time.time(),
                                   confirm_deletes=bool(confirm)) for s in chosen]
            for report in reports:
                runner.show(report, confirmed=bool(confirm), always=True)
            stuck = [f"{r.source.name} {r.state}" for r in reports if r.state != "ok"]
            if stuck:
                raise click.ClickException(f"{', '.join(stuck)}: see the reason above")
            return
        try:
            keep_in_sync(store, settings, time.time, time.sleep, runner.show, lambda: False)
        except KeyboardInterrupt:
            click.echo("stopped")
