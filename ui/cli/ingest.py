"""Admin commands: `kb ingest`, `kb reindex`, `kb delete`, `kb status`, `kb worker` (`kb docs`
is ui/cli/docs.py).

Exit code 0 when the run completed (even with failed files); non-zero only when the command
itself could not run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from tqdm import tqdm

from core.access import parse_groups
from core.config import Settings
from core.errors import SymbolicLink
from core.types import IngestReport
from ingest.pipeline import (
    Progress,
    delete_document,
    ingest_paths,
    store_status,
)
from ingest.queue import run_worker, wait_for_batch
from ingest.reindex import reindex
from ingest.workers import limit_torch_threads
from ui.audit import AuditTrail, cli_actor, run_details, run_outcome
from ui.cli.common import shown, with_settings
from ui.cli.sync import SourceRunner
from ui.wiring import store_for

if TYPE_CHECKING:
    from store.store import Store


def _groups(value: str | None) -> list[str] | None:
    return list(parse_groups(value)) if value else None


@contextmanager
def _progress_bar(enabled: bool, store: Store) -> Iterator[Progress | None]:
    """A bar of the files (each file's passages embedded for both spaces in the ingest's
    waves), and one of the passages the crosslang space writes at the end of the write
    (store/crosslang_space.py: embedded then only for a store built before it was on)."""
    if not enabled:
        yield None
        return
    bar = tqdm(total=0, unit="file", dynamic_ncols=True, leave=False)
    space_bar: list[tqdm] = []  # made on the space's first report

    def update(done: int, total: int, path: str) -> None:
        bar.total = total
        bar.set_postfix_str(Path(path).name[-40:])
        bar.update(done - bar.n)

    def update_space(done: int, total: int) -> None:
        if not space_bar:
            space_bar.append(tqdm(total=total, unit="passage", desc="multilingual space",
                                  dynamic_ncols=True, leave=False))
        space_bar[0].update(done - space_bar[0].n)

    if store.space is not None:
        store.space.progress = update_space
    try:
        yield update
    finally:
        if store.space is not None:
            store.space.progress = None
        for one in (bar, *space_bar):
            one.close()


def _print_report(report: IngestReport) -> None:
    """Each file ingested, updated or removed, then each failed or skipped one with why, then
    the counts (names escaped: one file, one line)."""
    skipped = [o for o in report.outcomes if o.status == SymbolicLink.status]
    failed = [o for o in report.outcomes
              if o not in skipped and (o.outcome == "failed" or o.status != "ok")]
    for outcome in report.outcomes:
        if outcome.outcome in ("ingested", "updated", "removed"):
            click.echo(
                f"  {outcome.outcome:<9} {shown(outcome.path)}"
                + (f" ({outcome.chunks} chunks)" if outcome.chunks else "")
            )
    for word, outcomes in (("failed", failed), ("skipped", skipped)):
        for outcome in outcomes:
            click.echo(f"  {word:<9} {shown(outcome.path)}: {shown(outcome.reason)}")
    counts = report.counts
    click.echo(
        f"ingested {counts['ingested']}, unchanged {counts['unchanged']}, updated "
        f"{counts['updated']}, removed {counts['removed']}, failed {len(failed)}, skipped "
        f"{len(skipped)} ({report.embedded} passages embedded, {report.seconds:.1f} s)"
    )


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--groups", help="Access groups for these documents, comma-separated (default: config)."
)
@click.option("--prune", is_flag=True, help="Remove documents whose files disappeared from PATHS.")
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Processes that parse, and processes that embed (one writer).",
)
@click.option("--queue", is_flag=True, help="Leave new and changed files to `kb worker`s.")
@click.option("--wait", is_flag=True, help="With --queue: wait for the workers, then report.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@with_settings
def ingest_command(
    settings: Settings,
    paths: tuple[Path, ...],
    groups: str | None,
    prune: bool,
    workers: int,
    queue: bool,
    wait: bool,
    quiet: bool,
) -> None:
    """Ingest PDF and DOCX files and folders; unchanged files are skipped.

    \b
    kb ingest data/samples
    kb ingest policies/hr --groups hr --prune
    kb ingest /srv/policies --workers 4        # parse and embed in 4 processes each
    kb ingest /srv/policies --queue --wait     # `kb worker` processes do the files
    """
    if wait and not queue:
        raise click.UsageError("--wait goes with --queue")
    with store_for(settings) as store, _progress_bar(not quiet, store) as progress:
        report = ingest_paths(
            store, list(paths), _groups(groups), prune, progress, workers, queue=queue
        )
        if report.queued and not wait:
            _print_report(report)
            click.echo(
                f"{report.queued} files queued (batch {report.batch}) for `kb worker` processes"
            )
            _record_run(store.ledger, settings, "ingest.run", ", ".join(map(str, paths)),
                        report, groups=groups or "", prune=prune)
            return
        if report.queued:
            if not quiet:
                click.echo(f"waiting for `kb worker`s to take {report.queued} queued files")
            report = wait_for_batch(store, report, progress)
        _record_run(store.ledger, settings, "ingest.run", ", ".join(map(str, paths)), report,
                    groups=groups or "", prune=prune)
    _print_report(report)


@click.command("reindex")
@click.option(
    "--full", is_flag=True, help="Rebuild everything into a fresh collection, then switch."
)
@click.option("--workers", default=1, show_default=True, help="Parser processes.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@with_settings
def reindex_command(settings: Settings, full: bool, workers: int, quiet: bool) -> None:
    """Re-index every ingested source (incremental), or rebuild everything (--full).

    \b
    kb reindex
    kb reindex --full
    """
    with store_for(settings) as store, _progress_bar(not quiet, store) as progress:
        report = reindex(store, full, progress, workers)
        _record_run(store.ledger, settings, "reindex.run", "full" if full else "incremental",
                    report)
    _print_report(report)


def _record_run(ledger: Any, settings: Settings, event: str, target: str,
                report: IngestReport, **details: Any) -> None:
    """The run in the audit trail, with its counts."""
    AuditTrail(ledger, settings.audit).record(event, cli_actor(), object=target[:500],
                                              outcome=run_outcome(report), address="local",
                                              **run_details(report), **details)


@click.command("delete")
@click.argument("doc")
@with_settings
def delete_command(settings: Settings, doc: str) -> None:
    """Remove a document (id, path or file name) from the store."""
    with store_for(settings) as store:
        record = delete_document(store, doc)
        AuditTrail(store.ledger, settings.audit).record(
            "document.delete", cli_actor(), object=record.meta.path, address="local",
            doc_id=record.meta.id, chunks=record.chunk_count)
    click.echo(f"deleted {shown(record.meta.path)} ({record.chunk_count} chunks)")


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@with_settings
def status_command(settings: Settings, as_json: bool) -> None:
    """Store summary: documents, chunks, size, embedder, last run."""
    with store_for(settings) as store:
        status = store_status(store)
    if as_json:
        click.echo(json.dumps(status, ensure_ascii=False, indent=2))
        return
    by_status = ", ".join(f"{k} {v}" for k, v in sorted(status["by_status"].items())) or "none"
    click.echo(f"store      {status['store']}")
    click.echo(f"documents  {status['documents']} ({by_status})")
    click.echo(
        f"chunks     {status['chunks']} (vectors {status['vectors']} in {status['collection']})"
    )
    click.echo(f"size       {status['store_bytes'] / 1e6:.1f} MB")
    click.echo(f"embedder   {status['embedder']}")
    click.echo(f"multilingual {status['multilingual']}")
    jobs = status["jobs"]
    if jobs.get("queued") or jobs.get("running"):
        click.echo(f"queue      {jobs.get('queued', 0)} queued, {jobs.get('running', 0)} running")
    run = status["last_run"]
    if run:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["started_at"]))
        click.echo(
            f"last run   {run['kind']} at {when}: ingested {run['ingested']}, unchanged "
            f"{run['unchanged']}, updated {run['updated']}, removed {run['removed']}, "
            f"failed {run['failed']}"
        )


@click.command("worker")
@click.option("--drain", is_flag=True, help="Stop when no job is left (default: keep waiting).")
@click.option(
    "--threads",
    default=0,
    type=click.IntRange(min=0),
    help="torch threads for embedding (0: torch's default; cores / workers on a shared box).",
)
@with_settings
def worker_command(settings: Settings, drain: bool, threads: int) -> None:
    """Take files queued by `kb ingest --queue`: parse and embed them, then commit each under
    the store's write lock. Run one or more on any machine sharing the ledger and the store.
    Between jobs, the folders of [[sources]] that are due are synced (as `kb sync` does).

    \b
    kb worker                   # until stopped (Ctrl+C, SIGTERM)
    kb worker --drain           # until the queue is empty
    """
    limit_torch_threads(threads)
    with store_for(settings) as store:
        between = SourceRunner(store, settings) if settings.sources else None
        done = run_worker(store, drain=drain, between=between)
    click.echo(f"{done} jobs done")


COMMANDS = [
    ingest_command,
    reindex_command,
    delete_command,
    status_command,
    worker_command,
]
