"""Query commands: `kb ask`, `kb retrieve`, `kb eval`. Output formats are stable: other tools
read them."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from core.access import parse_groups
from core.config import Settings
from core.types import Answer
from ui.cli.common import shown, with_settings

if TYPE_CHECKING:  # imported where used: `kb --help` stays quick
    from assistant.answer import Assistant
    from assistant.pack import Count


def _groups(value: str | None, settings: Settings) -> list[str]:
    return list(parse_groups(value) if value else settings.ingest.default_groups)


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


@click.command("ask")
@click.argument("question")
@click.option("--groups", help="The asker's access groups, comma-separated (default: config).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object when done.")
@with_settings
def ask_command(settings: Settings, question: str, groups: str | None, as_json: bool) -> None:
    """Answer a question with citations; streams the answer, then the sources.

    \b
    kb ask "How many days of annual leave can I carry over?"
    kb ask "出差住宿标准是多少？" --groups all,hr --json
    """
    from assistant.answer_json import answer_to_json
    from ui.wiring import services_for

    with services_for(settings) as services:
        final: Answer | None = None
        for item in services.assistant.ask_stream(question, _groups(groups, settings)):
            if isinstance(item, Answer):
                final = item
            elif not as_json:
                click.echo(item, nl=False)
    if final is None:
        raise click.ClickException("no answer was produced")
    if as_json:
        click.echo(_dump(answer_to_json(final)))
        return
    click.echo("")
    if final.mode == "generated" and final.answer != "":
        click.echo("")
    for c in final.citations:
        where = _place(c.page, c.section, c.page_label)
        click.echo(f"[{c.n}] {shown(c.file)} {shown(where)}"
                   + ("" if c.supported else " (unsupported)"))
    t = final.timings_ms
    click.echo(f"({final.mode}; " + ", ".join(f"{k} {v:.0f} ms" for k, v in t.items()) + ")")


def _place(page: int | None, section: str, page_label: str | None) -> str:
    """Where a passage stands, for the terminal: `p.3 (printed i)`, or the section path."""
    if page is None:
        return section
    return f"p.{page}" + (f" (printed {page_label})" if page_label else "")


@click.command("retrieve")
@click.argument("question", required=False)
@click.option(
    "--questions",
    "questions_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A JSONL file of {id, question, history?}: one output line each.",
)
@click.option("--groups", help="The asker's access groups, comma-separated (default: config).")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@with_settings
def retrieve_command(
    settings: Settings,
    question: str | None,
    questions_file: Path | None,
    groups: str | None,
    as_json: bool,
) -> None:
    """Show the passages a question puts into the prompt: packed into the passage budget, in
    the order the prompt shows them (document order), with the text and page span as packed.
    An item with `history` (earlier turns, oldest first) is searched for as a follow-up read
    with them; its line says what was searched for.

    \b
    kb retrieve "年假可以结转吗？" --json
    kb retrieve --questions qa.jsonl --json
    """
    from assistant.evaluation.evaluate import load_questions
    from assistant.window import window_counter
    from ui.wiring import services_for

    if (question is None) == (questions_file is None):
        raise click.UsageError("give a QUESTION or --questions FILE")
    items: list[dict[str, Any]]
    if questions_file is not None:
        items = load_questions(questions_file)
    else:
        items = [{"id": None, "question": question}]
    count = window_counter(settings)
    with services_for(settings) as services:
        for item in items:
            line = _packed(services.assistant, item, _groups(groups, settings), settings, count)
            if not as_json:
                _echo_packed(item["question"], line)
                continue
            if questions_file is not None:
                line = {"id": item.get("id"), **line}
            click.echo(_dump(line))


def _packed(assistant: Assistant, item: dict[str, Any], groups: list[str], settings: Settings,
            count: Count) -> dict[str, Any]:
    """What one item of `kb retrieve` puts into the prompt: whether it would be refused, what
    was searched for (a follow-up read with its `history`) and the passages as packed."""
    from assistant.answer import should_abstain
    from assistant.answer_json import passage_to_json
    from assistant.evaluation.evaluate import earlier_turns
    from assistant.window import fill_window, snapshot_neighbours

    retriever = assistant.retriever
    reading = assistant.read(item["question"], earlier_turns(item))
    retrieval = retriever.retrieve(reading.question, groups, context=reading.context)
    packed = fill_window(retrieval.passages, reading.text, retrieval.lang, count, settings,
                         snapshot_neighbours(retriever.snapshot()))
    return {
        "abstain": should_abstain(retrieval, settings),
        "searched_for": reading.text,
        "passages": [passage_to_json(p, n) for n, p in enumerate(packed, 1)],
    }


def _echo_packed(question: str, line: dict[str, Any]) -> None:
    """`kb retrieve`'s lines for one question: what was searched for, then each passage as
    packed, its place and score and the start of its text."""
    click.echo(f"{question}" + ("  (would abstain)" if line["abstain"] else ""))
    if line["searched_for"] != question:
        click.echo(f"  searched for: {line['searched_for']}")
    for p in line["passages"]:
        where = _place(p["page"], p["section"], p["page_label"])
        click.echo(f"  {p['rank']}. {shown(p['file'])} {shown(where)}  {p['score']:.4f}")
        click.echo(f"     {p['text'][:160]!r}")


@click.command("eval")
@click.argument("set_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.option("--no-baseline", is_flag=True, help="Skip the LlamaIndex starter comparison.")
@click.option(
    "--docs",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The set's documents, when not in SET_DIR/docs.",
)
@click.option(
    "--library",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    multiple=True,
    help="Also score the set in one store holding these folders' documents (a set's docs/) too.",
)
@click.option("--llm", is_flag=True, help="Also ask the model: citation precision.")
@click.option(
    "--lang",
    "llm_lang",
    type=click.Choice(["en", "zh"]),
    default=None,
    help="With --llm: only questions in this language.",
)
@click.option(
    "--record",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the report as this record (bench/eval_*.json), keeping its note and command.",
)
@with_settings
def eval_command(
    settings: Settings,
    set_dir: Path,
    as_json: bool,
    no_baseline: bool,
    llm: bool,
    llm_lang: str | None,
    docs: Path | None,
    library: tuple[Path, ...],
    record: Path | None,
) -> None:
    """Score retrieval on SET_DIR (docs/ + qa.jsonl) beside the LlamaIndex starter. Items
    with `history` are follow-ups, searched for as read with their earlier questions.

    \b
    kb eval ../shared/eval/public
    kb eval ../shared/eval/followup --docs ../shared/eval/public2/docs
    kb eval ../shared/eval/crosslang --docs ../shared/eval/public2/docs
    kb eval ../shared/eval/public --library ../shared/eval/public2   # also in one shared store
    kb eval ../shared/eval/public --no-baseline --record bench/eval_public.json
    """
    from assistant.evaluation.evaluate import run_eval
    from assistant.evaluation.record import dumps, rerecorded
    from ui.wiring import open_services

    report = run_eval(
        settings,
        set_dir,
        open_services,
        baseline=not no_baseline,
        llm=llm,
        llm_lang=llm_lang,
        docs=docs,
        library=library,
    )
    if record is not None:
        old = json.loads(record.read_text("utf-8")) if record.is_file() else {}
        today = datetime.date.today().isoformat()
        record.write_text(dumps(rerecorded(old, report, today)) + "\n", encoding="utf-8")
    if as_json:
        click.echo(dumps(report))
    else:
        _echo_report(report)


def _echo_report(report: dict[str, Any]) -> None:
    """`kb eval`'s table: each system's metrics by language (and kind), a cross-language set's
    directions and gate, the same in the library store beside the set's own (--library), and
    the citation precision when the model was asked."""
    from assistant.evaluation.library import beside

    _echo_systems(report)
    if "library" in report:
        shared = report["library"]
        click.echo(f"in one store with {', '.join(shared['folders'])} ({shared['documents']} "
                   f"documents, {shared['passages']} passages):")  # fmt: skip
        _echo_systems(shared)
        click.echo("window recall (hit@1): its own store | the library store")
        for group, own, library in beside(report):
            click.echo(f"  {group:<8} {own:<16} | {library}")
    if "citations" in report:
        c = report["citations"]

        def share(value: float | None) -> str:
            return "–" if value is None else f"{value:.3f}"

        click.echo(
            f"citation precision {share(c['citation_precision'])} "
            f"({c['markers']} markers in {c['answered']} generated answers); after the "
            f"support check {share(c['citation_precision_after_check'])} "
            f"({c['markers_after_check']} markers)"
        )


def _echo_systems(report: dict[str, Any]) -> None:
    """Each system's metrics by language (and kind), a cross-language set's directions and its
    gates."""
    from assistant.evaluation.evaluate import METRICS

    def values(m: dict[str, Any]) -> str:
        return "  ".join(f"{key} " + ("–" if m[key] is None else f"{m[key]:.3f}")
                         for key in METRICS)  # fmt: skip

    # ours_alone: a follow-up set's questions searched for without their history (the control)
    for system in ("ours", "ours_alone", "llamaindex_starter"):
        if system not in report:
            continue
        click.echo(system)
        for lang, metrics in report[system].items():
            rows = [(lang, metrics)]
            rows += [(f"  {k}", m) for k, m in metrics.get("kinds", {}).items()]
            for name, m in rows:
                click.echo(f"  {name:<14} {values(m)}  ({m['counts']}; n={m['questions']})")
    for way, sides in report.get("directions", {}).items():  # a cross-language set
        for side, m in sides.items():
            click.echo(f"  {way} {side:<8} {values(m)}  ({m['counts']}; n={m['questions']})")
    if "gate" in report:
        gate = {k: v for k, v in report["gate"].items() if k != "questions"}
        click.echo(f"  bilingual gate: {gate}")


COMMANDS = [ask_command, retrieve_command, eval_command]
