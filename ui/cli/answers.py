"""`kb answers ...`: approved answers from the shell: list them (suspended ones first,
with the reason), add, edit, remove, export as JSON lines and import them back. Every change is
in the audit trail.

    kb answers add --question "How many days of annual leave carry over?" \\
        --answer "At most 5 days [1]." --cite Employee-Leave-Policy.pdf:2 \\
        --quote "at most 5 days of unused annual leave" --groups all --also "年假能结转几天？"
    kb answers list --suspended
    kb answers edit 3 --answer "..."          # re-approves a suspended answer
    kb answers export answers.jsonl && kb answers import answers.jsonl
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import click

from assistant.answer_json import approved_day
from assistant.approved.answers import ORIGINS, ApprovedAnswers, Draft, Ref
from assistant.retrieve.snapshot import Snapshot
from core.config import Settings
from core.errors import KbError
from core.types import ApprovedAnswer
from store.store import Store
from ui.audit import AuditTrail, cli_actor
from ui.cli.common import with_settings
from ui.wiring import store_for

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def _answers(settings: Settings) -> Iterator[tuple[Store, ApprovedAnswers, AuditTrail]]:
    with store_for(settings) as store:
        audit = AuditTrail(store.ledger, settings.audit)
        try:
            yield store, ApprovedAnswers(store), audit
        finally:
            audit.close()


def _refs(cite: Sequence[str], quote: Sequence[str]) -> list[Ref]:
    """--cite REF pairs with --quote by position (a chunk id needs no quote)."""
    if len(quote) > len(cite):
        raise click.UsageError("more --quote than --cite: give each quote after its --cite")
    return [Ref(ref, quote[i] if i < len(quote) else "") for i, ref in enumerate(cite)]


def _line(answer: ApprovedAnswer) -> str:
    state = answer.status if answer.status == "active" else f"SUSPENDED: {answer.suspended_reason}"
    cited = ", ".join(f"[{c.n}] {c.file}" + (f" p.{c.page}" if c.page else "")
                      for c in answer.citations)
    return (f"{answer.id:>4}  {answer.question}\n      {state} · approved by {answer.author} on "
            f"{approved_day(answer.approved_at)} · groups {','.join(answer.groups)} · {cited}")


@click.group("answers")
def answers_group() -> None:
    """Approved answers: served before retrieval to questions that mean the same."""


@answers_group.command("list")
@click.option("--suspended", is_flag=True, help="Only the suspended ones (to review).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per answer.")
@with_settings
def answers_list(settings: Settings, suspended: bool, as_json: bool) -> None:
    """List approved answers, suspended ones first with the reason."""
    with store_for(settings) as store:
        found = store.ledger.approved_answers("suspended" if suspended else None)
    for answer in found:
        click.echo(json.dumps(asdict(answer), ensure_ascii=False) if as_json else _line(answer))
    if not as_json:
        click.echo(f"{len(found)} approved answers")


def _draft_options(func: F) -> F:
    """The options an answer is written with, shared by `add` and `edit`."""
    for option in reversed([
        click.option("--question", help="The question it answers."),
        click.option("--answer", "text", help="The answer, its citations as [1], [2], ..."),
        click.option("--cite", multiple=True,
                     help="A passage: chunk id, or FILE[:PAGE] with --quote (repeat)."),
        click.option("--quote", multiple=True, help="Words of the cited passage (per --cite)."),
        click.option("--groups", help="Comma-separated groups that may get it."),
        click.option("--also", multiple=True, help="Another way to ask it, e.g. in the other "
                     "language (repeat)."),
        click.option("--origin", type=click.Choice(ORIGINS), help="Where it started from."),
        click.option("--ref", "origin_ref", help="Which gap, feedback or question it came from."),
    ]):
        func = option(func)
    return func


@answers_group.command("add")
@_draft_options
@with_settings
def answers_add(settings: Settings, question: str | None, text: str | None, cite: tuple[str, ...],
                quote: tuple[str, ...], groups: str | None, also: tuple[str, ...],
                origin: str | None, origin_ref: str | None) -> None:
    """Approve an answer to a question, citing live passages.

    \b
    kb answers add --question "年假可以结转几天？" --answer "最多 5 天 [1]。" \\
        --cite 员工手册.pdf:3 --quote "结转" --groups all --also "How many leave days carry over?"
    """
    draft = Draft(question or "", text or "", _refs(cite, quote), (groups or "all").split(","),
                  also, origin or "scratch", origin_ref or "")
    with _answers(settings) as (store, approved, audit):
        try:
            saved = approved.save(draft, cli_actor(), Snapshot(store))
        except KbError as exc:
            raise click.ClickException(str(exc)) from exc
        audit.record("answer.add", cli_actor(), object=str(saved.id), address="local",
                     question=saved.question, groups=list(saved.groups),
                     cites=[c.chunk_id for c in saved.citations])
    click.echo(f"approved answer {saved.id}: {saved.question}")


@answers_group.command("edit")
@click.argument("answer_id", type=int)
@_draft_options
@with_settings
def answers_edit(settings: Settings, answer_id: int, question: str | None, text: str | None,
                 cite: tuple[str, ...], quote: tuple[str, ...], groups: str | None,
                 also: tuple[str, ...], origin: str | None, origin_ref: str | None) -> None:
    """Change an approved answer (what is not given stays) and approve it again: a suspended
    one becomes active once its citations are live.

    \b
    kb answers edit 3 --cite Employee-Leave-Policy.pdf:2 --quote "at most 5 days"
    """
    with _answers(settings) as (store, approved, audit):
        old = store.ledger.approved_answer(answer_id)
        if old is None:
            raise click.ClickException(f"approved answer {answer_id}: no such answer "
                                       "(see `kb answers list`)")
        refs = _refs(cite, quote) or [Ref(c.chunk_id, c.quote) for c in old.citations]
        draft = Draft(question or old.question, text or old.answer, refs,
                      groups.split(",") if groups else old.groups, also or old.variants,
                      origin or old.origin, old.origin_ref if origin_ref is None else origin_ref,
                      answer_id)
        try:
            saved = approved.save(draft, cli_actor(), Snapshot(store))
        except KbError as exc:
            raise click.ClickException(str(exc)) from exc
        audit.record("answer.edit", cli_actor(), object=str(saved.id), address="local",
                     question=saved.question, groups=list(saved.groups), was=old.status,
                     cites=[c.chunk_id for c in saved.citations])
    click.echo(f"approved answer {saved.id} saved ({saved.status})")


@answers_group.command("remove")
@click.argument("answer_id", type=int)
@with_settings
def answers_remove(settings: Settings, answer_id: int) -> None:
    """Remove an approved answer."""
    with _answers(settings) as (_, approved, audit):
        try:
            gone = approved.remove(answer_id)
        except KbError as exc:
            raise click.ClickException(str(exc)) from exc
        audit.record("answer.remove", cli_actor(), object=str(answer_id), address="local",
                     question=gone.question)
    click.echo(f"removed approved answer {answer_id}")


@answers_group.command("export")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@with_settings
def answers_export(settings: Settings, file: Path) -> None:
    """Write every approved answer as JSON lines ("-": standard output)."""
    with _answers(settings) as (store, approved, audit):
        found = store.ledger.approved_answers()
        lines = list(approved.export_lines(found))
        if str(file) == "-":
            sys.stdout.writelines(lines)
        else:
            file.write_text("".join(lines), encoding="utf-8")
        audit.record("answer.export", cli_actor(), object=str(file), address="local",
                     rows=len(lines))
    if str(file) != "-":
        click.echo(f"{len(lines)} approved answers written to {file}")


@answers_group.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@with_settings
def answers_import(settings: Settings, file: Path) -> None:
    """Add the answers of a JSON-lines export, approved again by you; a bad line is reported
    (its number and the fix) and the rest go on."""
    lines = file.read_text(encoding="utf-8").splitlines()
    with _answers(settings) as (store, approved, audit):
        saved, problems = approved.import_lines(lines, cli_actor(), Snapshot(store))
        audit.record("answer.import", cli_actor(), object=str(file), address="local",
                     outcome="ok" if not problems else "partial", added=len(saved),
                     failed=len(problems))
    for problem in problems:
        click.echo(f"{file}: {problem}", err=True)
    click.echo(f"{len(saved)} approved answers imported, {len(problems)} lines failed")
    if problems:
        sys.exit(1)
