"""`kb abstain fit`'s held-out checks and the model it writes, on made-up evidence (the
retrieval that measures real evidence is tested in tests/assistant/test_answerable.py)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from assistant.answerable import AnswerableModel, LangModel
from ui.cli import main
from ui.cli.abstain import fit_sets, other_sets, parse_names, two_fold

GOOD = {"amount_mass": 1.2, "documents": 0.4, "absent": 0.0}
BAD = {"amount_mass": 0.2, "documents": 1.0, "absent": 0.5}


def rows(n_good: int, n_bad: int) -> list[tuple[dict[str, float], bool]]:
    return [(GOOD, True)] * n_good + [(BAD, False)] * n_bad


def test_two_fold_scores_each_half_with_a_model_fitted_on_the_other() -> None:
    report = two_fold(rows(10, 4), "en", 0.05, ("amount_mass", "documents"))
    assert report == {"abstain_acc": 1.0, "refused": "0/10", "answered": "0/4"}
    # an unanswerable question whose evidence looks answerable is answered, held out
    fooled = [*rows(10, 4), (GOOD, False), (GOOD, False)]
    assert two_fold(fooled, "en", 0.05, ("amount_mass",))["answered"] == "2/6"


def test_other_sets_scores_each_set_by_the_rest_and_needs_two() -> None:
    by_set = {"a": rows(6, 2), "b": rows(5, 3)}
    report = other_sets(by_set, "zh", 0.0, ("amount_mass", "documents"))
    assert report["a"]["refused"] == "0/6" and report["b"]["answered"] == "0/3"
    assert other_sets({"a": rows(6, 2)}, "zh", 0.0, ("amount_mass",)) == {}


def test_fit_sets_writes_one_model_per_language_with_its_checks_in_the_note() -> None:
    summary = fit_sets(
        {"en": {"a": rows(8, 2), "b": rows(8, 2)}, "zh": {"a": rows(8, 2)}},
        0.05,
        ("amount_mass", "documents"),
        "setA setB",
    )
    data = summary["model"]
    assert data["features"] == ["amount_mass", "documents"]
    assert set(data["languages"]) == {"en", "zh"}
    assert "held-out checks" in data["note"] and "--max-refused 0.05" in data["note"]
    assert set(summary["held_out"]["en"]) == {"two_fold", "other_sets"}
    en = data["languages"]["en"]
    model = AnswerableModel(
        {"en": LangModel(tuple(en["coefficients"]), en["intercept"], en["threshold"])},
        names=("amount_mass", "documents"),
    )
    assert not model.refuses(GOOD, "en") and model.refuses(BAD, "en")


def test_features_option_is_checked() -> None:
    assert parse_names("") == ("amount_mass", "documents")
    assert parse_names("absent, dense") == ("absent", "dense")
    with pytest.raises(click.BadParameter, match="choose among"):
        parse_names("absent,colour")


def test_a_wrong_feature_name_fails_before_any_ingest(tmp_path: Path) -> None:
    # no qa.jsonl here: reading the set first would fail on that instead
    result = CliRunner().invoke(
        main,
        ["abstain", "fit", str(tmp_path), "--out", str(tmp_path / "m.json"), "--features", "x"],
    )
    assert result.exit_code != 0 and "choose among" in result.output
    assert not (tmp_path / "m.json").exists()
