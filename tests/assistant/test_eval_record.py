"""The gate that holds a `kb eval` run to its record (assistant/evaluation/record.py): a figure may
fall one question's worth below its record and no more, a record names its CPU and keeps each
question's outcome, and a run that falls short says which questions moved."""

from __future__ import annotations

import json
from pathlib import Path

from assistant.evaluation.evaluate import Hit, Outcome, question_outcomes, score
from assistant.evaluation.record import (
    VECTOR_FLAGS,
    check,
    dumps,
    moved,
    rerecorded,
    shortfalls,
    this_cpu,
    tolerance,
)

REPO = Path(__file__).resolve().parents[2]
RECORDS = sorted((REPO / "bench").glob("eval_*.json"))


def test_the_amd_run_holds_the_crosslang_record_and_a_second_question_does_not() -> None:
    """An AMD EPYC run's en→zh hit@5 was 0.5 against 0.556 recorded on an Intel Xeon: one of 18
    answerable questions left the top 5, which the old gate (0.02) failed."""
    was = {"en→zh": {"hit@5": 0.556, "in_window": 0.833}}
    one = {"en→zh": {"hit@5": 0.5, "in_window": 0.833, "answerable": 18, "questions": 20}}
    two = {"en→zh": {"hit@5": 0.444, "in_window": 0.833, "answerable": 18, "questions": 20}}
    assert 0.5 < 0.556 - 0.02  # what CI failed on
    assert shortfalls(one, was, ("hit@5", "in_window")) == []
    assert shortfalls(two, was, ("hit@5", "in_window")) == [
        "en→zh hit@5 0.444 against recorded 0.556: worse by more than 0.0566 (one of 18 questions)"
    ]


def test_the_tolerance_is_one_question_of_those_behind_the_figure() -> None:
    for n in (18, 20, 26, 42, 50, 63, 75):
        for k in range(n + 1):
            recorded = round(k / n, 3)
            for fell in range(k + 1):
                now = round((k - fell) / n, 3)
                held = now >= recorded - tolerance(n)
                assert held == (fell <= 1), (n, k, fell)
    # abstention accuracy is over every question, the rest over the answerable ones
    figures = {"en": {"abstain_acc": 0.84, "hit@1": 0.905, "answerable": 42, "questions": 50}}
    assert shortfalls(figures, {"en": {"abstain_acc": 0.86, "hit@1": 0.929}},
                      ("abstain_acc", "hit@1")) == []  # fmt: skip
    figures["en"]["abstain_acc"] = 0.82
    assert len(shortfalls(figures, {"en": {"abstain_acc": 0.86}}, ("abstain_acc",))) == 1
    # a figure that is None (no answerable question) or not recorded is not compared
    assert shortfalls({"en": {"hit@1": None, "answerable": 0, "questions": 2}},
                      {"en": {"hit@1": 1.0}}, ("hit@1",)) == []  # fmt: skip
    assert shortfalls({"zh": {"hit@1": 0.0, "answerable": 5, "questions": 5}}, {},
                      ("hit@1",)) == []  # fmt: skip


def test_window_recall_and_answerable_refusals_may_not_lose_one_question() -> None:
    """What reaches the model and what is refused outright stay as strict as the 0.02 gate held
    them on sets of fewer than 50 questions: not one question may move the wrong way."""
    was = {"en": {"in_window": 0.833, "refused": 0.111, "abstain_acc": 0.8, "hit@1": 0.167}}
    same = {"en": {**was["en"], "answerable": 18, "questions": 20}}
    assert shortfalls(same, was, ("in_window", "refused", "abstain_acc", "hit@1")) == []
    one_each = {"en": {"in_window": 0.778, "refused": 0.167, "abstain_acc": 0.75, "hit@1": 0.111,
                       "answerable": 18, "questions": 20}}  # fmt: skip
    assert shortfalls(one_each, was, ("in_window", "refused", "abstain_acc", "hit@1")) == [
        "en in_window 0.778 against recorded 0.833: worse by more than 0.0010 (strict)",
        "en refused 0.167 against recorded 0.111: worse by more than 0.0010 (strict)",
    ]
    fewer_refused = {"en": {**same["en"], "refused": 0.056, "in_window": 0.889}}
    assert shortfalls(fewer_refused, was, ("in_window", "refused")) == []


def test_a_failing_check_names_the_figure_and_the_questions_that_moved() -> None:
    was_outcomes = {
        "q1": {"lang": "en", "rank": 4, "in_window": True, "refused": False},
        "q2": {"lang": "en", "rank": 1, "in_window": True, "refused": False},
        "q3": {"lang": "en", "rank": 2, "in_window": True, "refused": False},
        "u1": {"lang": "en", "refused": True},
    }
    now_outcomes = {
        **was_outcomes,
        "q1": {"lang": "en", "rank": None, "in_window": False, "refused": True},
        "q3": {"lang": "en", "rank": 9, "in_window": True, "refused": False},
        "u1": {"lang": "en", "refused": False},
    }
    now = {"en": {"hit@5": 0.333, "answerable": 3, "questions": 4}}
    message = check(now, {"en": {"hit@5": 1.0}}, ("hit@5",), (now_outcomes, was_outcomes), "public")
    assert message.splitlines() == [
        "public: figures below their record:",
        "  en hit@5 0.333 against recorded 1.000: worse by more than 0.3343 (one of 3 questions)",
        "  questions whose outcome moved (recorded -> now):",
        "  q1 (en): rank 4, in window -> rank -, not in window, refused",
        "  q3 (en): rank 2, in window -> rank 9, in window",
        "  u1 (en): refused -> answered",
    ]
    assert check(now, {"en": {"hit@5": 0.6}}, ("hit@5",), (now_outcomes, was_outcomes), "x") == ""
    assert moved({}, {"q9": {"lang": "zh", "refused": False}}) == ["q9 (zh): answered -> not asked"]



def test_outcomes_are_kept_per_question_and_scored_alike() -> None:
    gold = [{"file": "a.pdf", "page": 2, "quote": "twelve weeks"}]
    right, wrong = Hit("a.pdf", 2, 2, "You get twelve weeks."), Hit("a.pdf", 5, 5, "Other.")
    questions = [
        {"id": "1", "lang": "en", "answerable": True, "gold": gold},
        {"id": "2", "lang": "en", "answerable": True, "gold": gold},
        {"id": "3", "lang": "en", "answerable": False, "gold": []},
    ]
    results = {
        "1": Outcome(False, [wrong, right], [wrong, right]),
        "2": Outcome(True, [wrong], [wrong]),
        "3": Outcome(False, [wrong], [wrong]),
    }
    assert question_outcomes(questions, results) == {
        "1": {"lang": "en", "rank": 2, "in_window": True, "refused": False},
        "2": {"lang": "en", "rank": None, "in_window": False, "refused": True},
        "3": {"lang": "en", "refused": False},
    }
    en = score(questions, results)["en"]
    assert (en["answerable"], en["questions"], en["hit@5"]) == (2, 3, 0.5)


def test_this_cpu_names_the_model_and_the_vector_extensions() -> None:
    info = "processor : 0\nmodel name : Intel(R) Xeon(R) Platinum 8480+\nflags : fpu avx2 fma " \
           "avx512f avx512_bf16 amx_tile amx_bf16 sse4_2\n\nprocessor : 1\nmodel name : other\n"
    cpu = this_cpu(info)
    assert cpu["cpu"] == "Intel(R) Xeon(R) Platinum 8480+"
    assert cpu["flags"] == "avx2 fma avx512f avx512_bf16 amx_tile amx_bf16"
    assert cpu["cores"] >= 1
    here = this_cpu()  # this machine's, from /proc/cpuinfo
    assert set(here["flags"].split()) <= set(VECTOR_FLAGS) and here["cpu"]


def test_a_record_reads_one_question_a_line_and_rerecords_in_one_command() -> None:
    report = {"set": "/x/eval/public", "host": {"cpu": "AMD EPYC", "cores": 2, "flags": "avx2"},
              "ours": {"en": {"hit@1": 0.5, "hit@5": 1.0, "hit@10": 1.0, "mrr@10": 0.75,
                              "in_window": 1.0, "abstain_acc": 0.667, "refused": 0.5,
                              "answered": 0.0, "counts": "refused 1/2, answered 0/1",
                              "questions": 3, "answerable": 2}},
              "outcomes": {"ours": {"1": {"lang": "en", "rank": 2, "in_window": True,
                                          "refused": False}}}}  # fmt: skip
    text = dumps(report)
    assert '  "1": {"lang": "en", "rank": 2, "in_window": true, "refused": false}' in text
    assert '   "hit@1": 0.5,' in text  # a figures object stays one figure a line
    assert json.loads(text) == report
    old = {"command": "kb eval … --record bench/eval_public.json", "date": "2026-12-03",
           "note": "why", "llamaindex_starter": {"en": {}}, "ours": {"en": {"hit@1": 0.4}}}
    new = rerecorded(old, report, "2026-12-06")
    assert new["command"] == old["command"] and new["note"] == "why"
    assert new["date"] == "2026-12-06" and new["ours"] == report["ours"]
    assert new["llamaindex_starter"] == {"en": {}} and "set" not in new
    assert new["host"]["cpu"] == "AMD EPYC" and new["outcomes"] == report["outcomes"]


def test_every_record_names_its_cpu_and_keeps_each_questions_outcome() -> None:
    assert RECORDS, "no bench/eval_*.json"
    for path in RECORDS:
        record = json.loads(path.read_text("utf-8"))
        assert record["host"]["cpu"] and "avx2" in record["host"]["flags"].split(), path.name
        ours = record["outcomes"]["ours"]
        for lang, figures in record["ours"].items():
            if lang == "all":
                continue
            asked = [o for o in ours.values() if o["lang"] == lang]
            assert len(asked) == figures["questions"], (path.name, lang)
            ranked = [o for o in asked if "rank" in o]
            assert len(ranked) == figures["answerable"], (path.name, lang)
            in_window = sum(o["in_window"] for o in ranked) / len(ranked)
            assert round(in_window, 3) == figures["in_window"], (path.name, lang)
