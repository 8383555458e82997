"""`kb abstain fit`: refit the answerability model on labelled questions.

Each SET_DIR holds `docs/` and `qa.jsonl` (id, lang, question, answerable), as for `kb eval`.
The documents are ingested into a temporary store, every question is retrieved, and one
logistic regression per language is fitted on the retrieval evidence (assistant/answerable.py).
Before the final fit it reports, per language, a two-fold check: fitted on every other
question, scored on the rest, and the other way round.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from core.config import Settings
from ui.cli_common import with_settings

Row = tuple[Mapping[str, float], bool]


def collect(settings: Settings, set_dir: Path) -> list[tuple[str, Row]]:
    """(lang, (evidence, answerable)) for every question of a set, in file order."""
    from assistant.evaluation.evaluate import eval_settings, evaluate_ours, load_questions
    from ui.wiring import services_for

    questions = load_questions(set_dir / "qa.jsonl")
    evidence: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="kb-abstain-") as tmp, services_for(
        eval_settings(settings, Path(tmp))
    ) as services:
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


def two_fold(rows: Sequence[Row], lang: str, max_refused: float) -> dict[str, Any]:
    """Fit on the even-numbered questions, score the odd ones, and the other way round."""
    from assistant.answerable import AnswerableModel, fit_language

    total: dict[str, int] = {}
    for train_parity in (0, 1):
        train = [r for i, r in enumerate(rows) if i % 2 == train_parity]
        test = [r for i, r in enumerate(rows) if i % 2 != train_parity]
        model = AnswerableModel({lang: fit_language(train, max_refused)})
        for key, value in _errors(model, test, lang).items():
            total[key] = total.get(key, 0) + value
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
    "set_dirs", nargs=-1, required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the coefficients (JSON); name it in retrieve.answerable_model.",
)
@click.option(
    "--max-refused", default=0.0, show_default=True,
    help="Largest share of answerable questions the threshold may refuse (on the fit data).",
)
@with_settings
def fit_command(settings: Settings, set_dirs: tuple[Path, ...], out: Path,
                max_refused: float) -> None:
    """Fit the answerability model on labelled question sets; print a two-fold check.

    \b
    kb abstain fit ../shared/eval/public ../shared/eval/public2 --out answerable.json
    """
    from assistant.answerable import fit_language, model_json

    rows: dict[str, list[Row]] = {}
    for set_dir in set_dirs:
        for lang, row in collect(settings, set_dir):
            rows.setdefault(lang, []).append(row)
    report = {lang: two_fold(r, lang, max_refused) for lang, r in sorted(rows.items())}
    models = {lang: fit_language(r, max_refused) for lang, r in sorted(rows.items())}
    note = (
        f"kb abstain fit {' '.join(str(d) for d in set_dirs)} --max-refused {max_refused}; "
        f"two-fold check: {json.dumps(report, ensure_ascii=False)}"
    )
    out.write_text(json.dumps(model_json(models, note), ensure_ascii=False, indent=1) + "\n",
                   encoding="utf-8")
    click.echo(json.dumps({"two_fold": report, "out": str(out)}, ensure_ascii=False, indent=1))
