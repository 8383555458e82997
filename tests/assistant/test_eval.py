"""`kb eval` on the public sets, in CI: no figure of our retrieval may fall more than one
question's worth below its record in bench/eval_public.json (and bench/eval_public2.json, the
harder set; `assistant/evaluation/record.py`: what another CPU's arithmetic can move, and no
more), and ours must stay ahead of the LlamaIndex starter on the public set. A figure that falls
further fails with the questions whose outcome moved against the record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assistant.evaluation.evaluate import (
    METRICS,
    Hit,
    Outcome,
    load_questions,
    passage_hits,
    quote_hit,
    run_eval,
    score,
)
from assistant.evaluation.record import check
from ui.cli import main
from ui.wiring import open_services

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "bench" / "eval_public.json"
RECORDED2 = REPO / "bench" / "eval_public2.json"
RECORDED_FOLLOWUP = REPO / "bench" / "eval_followup.json"
LANGS = ("en", "zh")
GATED = (*METRICS, "refused")  # each against its record (record.py: which are strict)


def held(report: dict[str, Any], recorded: Path) -> str:
    """"" when each language's figures held their record; else what fell and what moved."""
    record = json.loads(recorded.read_text("utf-8"))
    now, was = report["ours"], record["ours"]
    outcomes = (report["outcomes"]["ours"], record["outcomes"]["ours"])
    return check({lang: now[lang] for lang in LANGS}, was, GATED, outcomes, recorded.name)


def test_quote_hit_rules() -> None:
    assert quote_hit("年休假 5 天", "职工累计工作已满1年不满10年的，年休假5天；")
    assert quote_hit("Carry Over  240 hours", "you can carry over 240 hours.")
    assert quote_hit("abcdefghij", "xxabcdefghyy")  # 80% as one contiguous run
    assert not quote_hit("abcdefghij", "abcdefgxxx")
    gold = [{"file": "a.pdf", "page": 3, "quote": "carry over"}]
    assert passage_hits(Hit("a.pdf", 2, 3, "Carry over"), gold)
    assert not passage_hits(Hit("a.pdf", 4, 4, "Carry over"), gold)
    assert not passage_hits(Hit("b.pdf", 3, 3, "Carry over"), gold)


def test_score_splits_languages_kinds_window_and_abstention_errors() -> None:
    gold = [{"file": "a.pdf", "page": 2, "quote": "twelve weeks"}]
    right, wrong = Hit("a.pdf", 2, 2, "You get twelve weeks."), Hit("a.pdf", 5, 5, "Other.")
    questions = [
        {"id": "1", "lang": "en", "answerable": True, "gold": gold, "kind": "direct"},
        {"id": "2", "lang": "en", "answerable": True, "gold": gold, "kind": "paraphrase"},
        {"id": "3", "lang": "en", "answerable": False, "gold": [], "kind": "unanswerable"},
        {"id": "4", "lang": "en", "answerable": False, "gold": [], "kind": "unanswerable"},
    ]
    results = {
        "1": Outcome(False, [right, wrong], [right]),  # hit@1, in the window
        "2": Outcome(True, [wrong, right], [wrong]),  # hit at 2, cut from the window, refused
        "3": Outcome(True, [wrong], [wrong]),  # rightly refused
        "4": Outcome(False, [wrong], [wrong]),  # answered
    }
    en = score(questions, results)["en"]
    assert (en["hit@1"], en["hit@5"], en["mrr@10"], en["in_window"]) == (0.5, 1.0, 0.75, 0.5)
    assert (en["abstain_acc"], en["refused"], en["answered"]) == (0.5, 0.5, 0.5)
    assert en["kinds"]["paraphrase"]["in_window"] == 0.0
    assert en["kinds"]["direct"]["in_window"] == 1.0
    assert en["kinds"]["unanswerable"]["answered"] == 0.5


@pytest.mark.slow
def test_public_eval_holds_the_recorded_values(make_settings, shared: Path) -> None:
    report = run_eval(make_settings(), shared / "eval" / "public", open_services, baseline=True)
    ours, starter = report["ours"], report["llamaindex_starter"]
    print(json.dumps({k: report[k] for k in ("host", "ours", "llamaindex_starter")}, indent=1))
    failed = held(report, RECORDED)
    assert not failed, failed
    for lang in LANGS:
        for metric in METRICS:
            assert ours[lang][metric] >= starter[lang][metric], (lang, metric, "behind the starter")


@pytest.mark.slow
def test_public2_eval_holds_the_recorded_values(make_settings, shared: Path) -> None:
    """The harder set (issue 10), ours only: the starter's figures on it are recorded in
    bench/eval_public2.json, and re-measuring them would cost CI minutes."""
    report = run_eval(make_settings(), shared / "eval" / "public2", open_services, baseline=False)
    print(json.dumps({k: report[k] for k in ("host", "ours")}, indent=1))
    failed = held(report, RECORDED2)
    assert not failed, failed


@pytest.mark.slow
def test_followup_eval_holds_the_recorded_values_and_the_targets(
    make_settings, shared: Path
) -> None:
    """The follow-up set (issue 25), read with each item's history: no value more than one
    question's worth below bench/eval_followup.json; window recall at least 0.95 per language,
    at most one answerable follow-up refused per language, and topic switches no worse than the
    follow-up searched for alone (the control, `ours_alone`, which must show the loss the
    history mends)."""
    report = run_eval(
        make_settings(),
        shared / "eval" / "followup",
        open_services,
        baseline=False,
        docs=shared / "eval" / "public2" / "docs",
    )
    ours, alone = report["ours"], report["ours_alone"]
    print(json.dumps({k: report[k] for k in ("host", "ours", "ours_alone")}, indent=1))
    failed = held(report, RECORDED_FOLLOWUP)
    assert not failed, failed
    for lang in LANGS:
        assert ours[lang]["in_window"] >= 0.95, ours[lang]
        assert ours[lang]["counts"].startswith(("refused 0/", "refused 1/")), ours[lang]
        switch = ours[lang]["kinds"]["switch"]["in_window"]
        assert switch >= alone[lang]["kinds"]["switch"]["in_window"], lang
    assert alone["en"]["in_window"] < ours["en"]["in_window"] - 0.1, "the control lost nothing"


def test_a_set_without_its_documents_says_where_to_find_them(tmp_path: Path) -> None:
    (tmp_path / "qa.jsonl").write_text("", "utf-8")
    result = CliRunner().invoke(main, ["eval", str(tmp_path), "--no-baseline"])
    assert result.exit_code != 0
    assert f"{tmp_path / 'docs'}: no such folder of documents; pass --docs DIR" in result.output


@pytest.mark.slow
def test_kb_eval_records_a_run_in_one_command(make_settings, tmp_path: Path) -> None:
    """`kb eval --record FILE` writes the run as the record: the CPU, each question's outcome,
    today's date, and the old record's command and note kept."""
    record = tmp_path / "eval_samples.json"
    old = {"command": "kb eval data/samples --record …", "date": "2000-01-01", "note": "why"}
    record.write_text(json.dumps(old), "utf-8")
    env = {"KB_EMBED_CACHE": str(make_settings().embed.cache), "KB_EMBED_MULTILINGUAL_MODEL": ""}
    args = ["eval", str(REPO / "data" / "samples"), "--no-baseline", "--record", str(record)]
    result = CliRunner().invoke(main, [*args, "--config", str(REPO / "config.toml")], env=env)
    assert result.exit_code == 0, result.output
    text = record.read_text("utf-8")
    new = json.loads(text)
    assert (new["command"], new["note"]) == (old["command"], old["note"])
    assert new["date"] != old["date"] and new["host"]["cpu"] and "set" not in new
    questions = load_questions(REPO / "data" / "samples" / "qa.jsonl")
    assert set(new["outcomes"]["ours"]) == {q["id"] for q in questions}
    some = next(iter(new["outcomes"]["ours"]))
    assert f'"{some}": {{"lang": ' in text  # one question a line
    assert new["ours"]["en"]["answerable"] == sum(q["answerable"] for q in questions
                                                  if q["lang"] == "en")  # fmt: skip


@pytest.mark.vllm
def test_kb_eval_asks_the_model(make_settings, vllm_server) -> None:
    """`kb eval --llm` asks the answerable questions of one language through the real server.
    The tiny random model talks nonsense, so only the protocol is checked: every question that
    was not abstained on is answered, and a precision without markers is null, not 0."""
    questions = load_questions(REPO / "data" / "samples" / "qa.jsonl")
    answerable = sum(1 for q in questions if q["lang"] == "en" and q["answerable"])
    env = vllm_server.cli_env(make_settings().embed.cache)
    args = ["eval", str(REPO / "data" / "samples"), "--llm", "--lang", "en", "--no-baseline"]
    result = CliRunner().invoke(main, [*args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    cited = json.loads(result.output)["citations"]
    assert 0 < cited["answered"] <= answerable
    for markers, share in (
        ("markers", "citation_precision"),
        ("markers_after_check", "citation_precision_after_check"),
    ):
        assert (cited[share] is None) == (cited[markers] == 0), cited
        assert cited[share] is None or 0 <= cited[share] <= 1
