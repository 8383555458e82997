"""`kb abstain fit`: refit the answerability model on labelled questions.

Each SET_DIR holds `docs/` and `qa.jsonl` (id, lang, question, answerable), as for `kb eval`.
The documents are ingested into a temporary store, every question is retrieved, and one
logistic regression per language is fitted on the retrieval evidence (assistant/answerable.py).
Before the final fit it reports, per language, a two-fold check: fitted on every other
question, scored on the rest, and the other way round; given two or more sets, also each set
scored by a model fitted on the others (material that model never saw).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from core.config import Settings
from ui.cli.common import with_settings

Row = tuple[Mapping[str, float], bool]


def collect(settings: Settings, set_dir: Path) -> list[tuple[str, Row]]:
    """(lang, (evidence, answerable)) for every question of a set, in file order."""
    from assistant.evaluation.evaluate import eval_settings, evaluate_ours, load_questions
    from ui.wiring import services_for

    questions = load_questions(set_dir / "qa.jsonl")
    evidence: dict[str, dict[str, float]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="kb-abstain-") as tmp,
        services_for(eval_settings(settings, Path(tmp))) as services,
    ):
        evaluate_ours(
            services,
            set_dir / "docs",
            questions,
            on_result=lambda qid, r: evidence.__setitem__(qid, r.evidence),
        )
    return [(q["lang"], (evidence[q["id"]], bool(q["answerable"]))) for q in questions]


def _errors(model: Any, rows: Sequence[Row], lang: str) -> dict[str, int]:
    counts = dict.fromkeys(("correct", "refused", "answered", "answerable", "unanswerable"), 0)
    for evidence, answerable in rows:
        refuses = model.refuses(evidence, lang)
        counts["answerable" if answerable else "unanswerable"] += 1
        counts["refused"] += answerable and refuses
        counts["answered"] += (not answerable) and (not refuses)
        counts["correct"] += refuses != answerable
    return counts


def held_out(
    folds: Sequence[tuple[Sequence[Row], Sequence[Row]]],
    lang: str,
    max_refused: float,
    names: Sequence[str],
) -> dict[str, Any]:
    """Fit on each fold's first rows, score its second; the errors summed over the folds."""
    from assistant.answerable import AnswerableModel, fit_language

    total: dict[str, int] = {}
    for train, test in folds:
        fitted = fit_language(train, max_refused, names=names)
        model = AnswerableModel({lang: fitted}, names=tuple(names))
        for key, value in _errors(model, test, lang).items():
            total[key] = total.get(key, 0) + value
    return _summary(total)


def two_fold(
    rows: Sequence[Row], lang: str, max_refused: float, names: Sequence[str]
) -> dict[str, Any]:
    """Fit on the even-numbered questions, score the odd ones, and the other way round."""
    folds = [
        (
            [r for i, r in enumerate(rows) if i % 2 == parity],
            [r for i, r in enumerate(rows) if i % 2 != parity],
        )
        for parity in (0, 1)
    ]
    return held_out(folds, lang, max_refused, names)


def other_sets(
    by_set: Mapping[str, Sequence[Row]], lang: str, max_refused: float, names: Sequence[str]
) -> dict[str, Any]:
    """Each set scored by a model fitted on the other sets (empty for fewer than two sets)."""
    return {
        name: held_out(
            [([r for other, rows in by_set.items() if other != name for r in rows], test)],
            lang,
            max_refused,
            names,
        )
        for name, test in by_set.items()
        if len(by_set) > 1 and test
    }


def _summary(total: Mapping[str, int]) -> dict[str, Any]:
    n = total["answerable"] + total["unanswerable"]
    return {
        "abstain_acc": round(total["correct"] / max(n, 1), 3),
        "refused": f"{total['refused']}/{total['answerable']}",
        "answered": f"{total['answered']}/{total['unanswerable']}",
    }


@click.group("abstain")
def abstain() -> None:
    """The answerability model that decides when the assistant refuses."""


@abstain.command("fit")
@click.argument(
    "set_dirs",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the coefficients (JSON); name it in retrieve.answerable_model.",
)
@click.option(
    "--max-refused",
    default=0.05,
    show_default=True,
    help="Largest share of answerable questions the threshold may refuse (on the fit data).",
)
@click.option(
    "--features",
    "names",
    default="",
    metavar="A,B,...",
    help="The evidence to weigh (assistant/answerable.py's EVIDENCE); default: the shipped "
    "model's.",
)
@with_settings
def fit_command(
    settings: Settings, set_dirs: tuple[Path, ...], out: Path, max_refused: float, names: str
) -> None:
    """Fit the answerability model on labelled question sets; print held-out checks.

    \b
    kb abstain fit ../shared/eval/public ../shared/eval/public2 --out answerable.json
    """
    chosen = parse_names(names)  # before minutes of ingest, not after
    by_set: dict[str, dict[str, list[Row]]] = {}
    for set_dir in set_dirs:
        for lang, row in collect(settings, set_dir):
            by_set.setdefault(lang, {}).setdefault(str(set_dir), []).append(row)
    summary = fit_sets(by_set, max_refused, chosen, " ".join(map(str, set_dirs)))
    out.write_text(
        json.dumps(summary.pop("model"), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    click.echo(json.dumps({**summary, "out": str(out)}, ensure_ascii=False, indent=1))


def parse_names(names: str) -> tuple[str, ...]:
    """The --features list, checked ("" for the shipped model's).

    parse_names("amount_mass, documents") -> ("amount_mass", "documents")
    """
    from assistant.answerable import EVIDENCE, FEATURES

    chosen = tuple(n.strip() for n in names.split(",") if n.strip()) or FEATURES
    unknown = [n for n in chosen if n not in EVIDENCE]
    if unknown:
        raise click.BadParameter(
            f"{unknown}: choose among {', '.join(EVIDENCE)}", param_hint="--features"
        )
    return chosen


def fit_sets(
    by_set: Mapping[str, Mapping[str, Sequence[Row]]],
    max_refused: float,
    names: Sequence[str],
    sets: str,
) -> dict[str, Any]:
    """Per language (`by_set`: lang -> set -> rows, in file order): the two-fold and
    other-sets checks, and the model fitted on every row, as the JSON a model file holds."""
    from assistant.answerable import fit_language, model_json

    report: dict[str, Any] = {}
    models = {}
    for lang, sets_rows in sorted(by_set.items()):
        rows = [r for set_rows in sets_rows.values() for r in set_rows]
        report[lang] = {
            "two_fold": two_fold(rows, lang, max_refused, names),
            "other_sets": other_sets(sets_rows, lang, max_refused, names),
        }
        models[lang] = fit_language(rows, max_refused, names=names)
    note = (
        f"kb abstain fit {sets} --max-refused {max_refused} --features {','.join(names)}; "
        f"held-out checks: {json.dumps(report, ensure_ascii=False)}"
    )
    return {"held_out": report, "model": model_json(models, note, names)}
