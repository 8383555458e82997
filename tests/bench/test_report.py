"""BENCHMARKS.md and the history's detail section are what `python -m bench report` fills into
their templates from the recorded reports: CI fails while either is stale, a figure changed in a
report makes them stale, and the tables and goals are drawn from what the reports say."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import main as bench_main
from bench.report.goals import api_overhead_goal, quality_goals, reindex_goal
from bench.report.recorded import (
    HISTORY,
    SOURCES,
    Recorded,
    Source,
    files_named,
    machine,
    module,
    shown,
    times,
)
from bench.report.render import PAGE, fill, main, render, stale_lines
from bench.report.sections import quality

REPO = Path(__file__).resolve().parents[2]


def test_benchmarks_md_is_what_the_recorded_reports_produce() -> None:
    diff = stale_lines(REPO)
    assert diff == [], "BENCHMARKS.md is stale: run `python -m bench report`\n" + "\n".join(diff)


def test_the_page_is_short() -> None:
    assert len((REPO / PAGE).read_text("utf-8").splitlines()) <= 200


def test_python_m_bench_report_checks_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main(["report", "--check"]) == 0
    assert "are what the reports produce" in capsys.readouterr().out


def copy_of_the_reports(root: Path) -> Path:
    """A checkout holding only what the pages read: every source's reports and the history."""
    for path in {p for source in SOURCES.values() for p in source.paths} | {HISTORY}:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, root / path)
    return root


def test_a_figure_changed_in_a_report_makes_the_page_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_of_the_reports(tmp_path)
    assert main([], root) == 0
    for path in (PAGE, HISTORY):
        assert (root / path).read_text("utf-8") == (REPO / path).read_text("utf-8")
    assert main(["--check"], root) == 0
    report = root / SOURCES["ingest"].paths[0]
    entries = json.loads(report.read_text("utf-8"))
    assert entries[0]["report"]["rounds"][0]["ours"]["pages_per_s"] == 3.62
    entries[0]["report"]["rounds"][0]["ours"]["pages_per_s"] = 3.61
    report.write_text(json.dumps(entries), "utf-8")
    capsys.readouterr()
    assert main(["--check"], root) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("-| public documents") and "3.62" in line for line in lines)
    assert any(line.startswith("+| public documents") and "3.61" in line for line in lines)


def test_a_figure_of_the_detail_changed_makes_the_history_stale(tmp_path: Path) -> None:
    root = copy_of_the_reports(tmp_path)
    main([], root)
    report = root / SOURCES["crosslang_translate"].paths[0]
    found = json.loads(report.read_text("utf-8"))
    assert found["defaults + perfect translation"]["zh→en"] == "0.889 (refused 0/18)"
    found["defaults + perfect translation"]["zh→en"] = "0.900 (refused 0/18)"
    report.write_text(json.dumps(found), "utf-8")
    diff = stale_lines(root)
    assert [line for line in diff if line.startswith("--- ")] == [f"--- {HISTORY}"]
    assert "+| defaults + perfect translation | 1.000 (refused 0/18) | 0.900 (refused 0/18) |" \
        in diff


def test_a_page_edited_by_hand_is_stale(tmp_path: Path) -> None:
    root = copy_of_the_reports(tmp_path)
    main([], root)
    page = root / PAGE
    page.write_text(page.read_text("utf-8").replace("## Goals", "## Goal"), "utf-8")
    number = page.read_text("utf-8").splitlines().index("## Goal") + 1
    assert stale_lines(root) == [
        f"--- {PAGE}", "+++ python -m bench report", f"@@ -{number} +{number} @@", "-## Goal",
        "+## Goals",
    ]


def test_the_history_keeps_what_is_around_its_written_section(tmp_path: Path) -> None:
    root = copy_of_the_reports(tmp_path)
    history = root / HISTORY
    text = history.read_text("utf-8")
    history.write_text(text.replace("## The current results in detail", "## Stale"), "utf-8")
    main([], root)
    assert history.read_text("utf-8") == text
    history.write_text(text.replace("<!-- end of what", "<!-- no end"), "utf-8")
    with pytest.raises(ValueError, match="lacks the lines that mark"):
        render(root)


def test_a_link_into_the_history_must_find_its_section(tmp_path: Path) -> None:
    root = copy_of_the_reports(tmp_path)
    history = root / HISTORY
    text = history.read_text("utf-8")
    heading = "## Issue 12: 1M and overhead, sixth pass (2026-12-01)"
    assert heading in text
    history.write_text(text.replace(heading, "## Issue 12: the sixth pass"), "utf-8")
    with pytest.raises(ValueError, match="issue-12-1m-and-overhead-sixth-pass-2026-12-01"):
        render(root)


def test_a_placeholder_no_section_fills_is_an_error() -> None:
    assert fill("p95 {{a.b}} ms", {"a.b": "3.2"}, "t") == "p95 3.2 ms"
    with pytest.raises(ValueError, match="t: no section fills a.c"):
        fill("p95 {{a.c}} ms", {"a.b": "3.2"}, "t")


def scores(hit1: float, counts: str = "refused 1/10, answered 0/2") -> dict[str, Any]:
    return {"hit@1": hit1, "hit@5": 1.0, "mrr@10": 0.9, "in_window": 0.96, "abstain_acc": 0.92,
            "counts": counts}


def made_up(root: Path, public2_hit1: float) -> Recorded:
    """Two made-up `kb eval` reports and an answerability model's note, in `root`."""
    starter = {"en": scores(0.5), "zh": scores(0.25)}
    for name, hit1 in (("public", 0.85), ("public2", public2_hit1)):
        report = {"command": f"kb eval {name} --json", "date": "2030-01-02",
                  "ours": {"en": scores(hit1), "zh": scores(hit1)}, "llamaindex_starter": starter,
                  "library": {"ours": {"en": scores(0.75), "zh": scores(0.7)}}}
        (root / f"{name}.json").write_text(json.dumps(report), "utf-8")
    fold = {"abstain_acc": 0.95, "refused": "1/30", "answered": "2/10"}
    other = {"public": {"abstain_acc": 0.9}, "public2": {"abstain_acc": 0.85}}
    checks = {lang: {"two_fold": fold, "other_sets": other} for lang in ("en", "zh")}
    note = {"note": f"kb abstain fit A B; held-out checks: {json.dumps(checks)}"}
    (root / "model.json").write_text(json.dumps(note), "utf-8")
    return Recorded(root, {
        "public": Source(("public.json",), machine="any"),
        "public2": Source(("public2.json",), machine="any"),
        "abstain": Source(("model.json",), date="2030-01-03", machine="any"),
    })


def test_the_quality_tables_are_drawn_from_the_reports(tmp_path: Path) -> None:
    found = quality(made_up(tmp_path, public2_hit1=0.65))
    assert "| public · en | 0.850 | 1.000 | 0.900 | 0.960 | 0.920 | 1/10, 0/2 | 0.500 / 1.000 " \
        "| 0.960 (0.750) |" in found["rows"].splitlines()  # the last: in the library store
    assert "| public2 · zh | 0.650 | 1.000 | 0.900 | 0.960 | 0.920 | 1/10, 0/2 | 0.250 / 1.000 " \
        "| 0.960 (0.700) |" in found["rows"].splitlines()
    assert found["run_public"] == (
        "`kb eval public --json` · any · 2030-01-02 · [`public.json`](public.json)")
    assert found["held_out"].splitlines()[0] == (
        "| en | 0.950 | 1/30 | 2/10 | 0.900 / 0.850 | 0.750 |")
    assert found["run_abstain"] == (
        "`kb abstain fit A B` · any · 2030-01-03 · [`model.json`](model.json)")


def test_a_goal_is_met_or_not_by_the_reports_figures(tmp_path: Path) -> None:
    def public2_goal(hit1: float) -> tuple[bool, str, str]:
        judged = quality_goals(made_up(tmp_path, hit1))
        return judged.met["public2"], judged.figures["public2_en"], judged.figures["public2_zh"]

    assert public2_goal(0.65) == (False, "0.650", "0.650")
    assert public2_goal(0.70) == (True, "0.700", "0.700")
    judged = quality_goals(made_up(tmp_path, 0.7))
    assert judged.met["abstain"]  # 0.95 held out in both languages
    assert judged.figures["refused"] == "1/30"


def test_a_re_index_goal_met_in_process_only_is_not_met(tmp_path: Path) -> None:
    def met(up: float, command: float) -> bool:
        entry = {"bench": "reindex", "returncode": 0, "command": "/x/bench/reindex_speed.py",
                 "report": {"reindex_1pct_changed": {"speedup_vs_fresh": up},
                            "cli": {"speedup_1pct_vs_fresh": command}}}
        (tmp_path / "r.json").write_text(json.dumps([entry]), "utf-8")
        sources = {"reindex": Source(("r.json",), bench="reindex")}
        return reindex_goal(Recorded(tmp_path, sources)).met["reindex"]

    assert not met(30.0, 8.0)
    assert met(30.0, 20.0)


def test_a_run_line_names_the_command_as_typed_today_host_and_date(tmp_path: Path) -> None:
    host = {"cpu": "AMD EPYC", "cores": 2, "steal_share": 0.0004}
    entry = {"bench": "ingest", "returncode": 0, "date": "2030-02-03", "host": host,
             "command": "/work/main/bench/ingest_speed.py /work/shared/eval/public/docs"}
    failed = {**entry, "returncode": 1, "date": "2030-02-04"}
    (tmp_path / "run.json").write_text(json.dumps([failed, entry]), "utf-8")
    rec = Recorded(tmp_path, {"ingest": Source(("run.json",), bench="ingest", date="2029-01-01")})
    assert rec.run_line("ingest") == (
        "`python -m bench.ingest.ingest_speed ../shared/eval/public/docs` · AMD EPYC, 2 cores, "
        "0.04% of CPU time stolen · 2030-02-03 · [`run.json`](run.json)")


def test_a_recorded_command_names_the_benchmark_where_it_is_now() -> None:
    assert shown("/work/main/bench/cold_start.py --rounds 5") == (
        "python -m bench.query.cold_start --rounds 5")
    assert shown("python -m bench.openai_overhead --rounds 300") == (
        "python -m bench.serving.openai_overhead --rounds 300")
    assert shown("/work/wt/x/bench/load.py") == "python -m bench.load.askers"
    assert shown("python -m bench.query.overhead --quick") == (
        "python -m bench.query.overhead --quick")
    assert module("crosslang.py") == "bench.query.crosslang"  # not bench/report/crosslang.py
    with pytest.raises(ValueError, match="no benchmark bench/ROOM/gone.py"):
        module("gone.py")


def test_helpers() -> None:
    assert files_named(("r/a-1.json", "r/a-2.json")) == "r/a-{1,2}.json"
    assert [times(x) for x in (1.25, 7.9, 37.4, 1057.7)] == ["1.25×", "7.9×", "37.4×", "1,058×"]
    partly = [{"host": {"cpu": "X", "cores": 4, "steal_share": None}}, {}]
    assert machine(partly, "") == "X, 4 cores (host recorded in 1 of 2 reports)"
    with pytest.raises(ValueError, match="needs the machine"):
        machine([{}], "")


def test_the_openai_overhead_goal_is_judged_on_both_ways_of_every_run(tmp_path: Path) -> None:
    def entry(plain: float, streamed: float) -> dict[str, Any]:
        def way(diff: float) -> dict[str, float]:
            return {"p95_diff_ms": diff}

        return {"bench": "openai", "returncode": 0,
                "report": {"goal_ms": 5.0, "openai_vs_api": way(plain),
                           "openai_stream_vs_api_stream": way(streamed)}}

    def goal(*entries: dict[str, Any]) -> tuple[bool, str, str]:
        paths = tuple(f"o{n}.json" for n in range(len(entries)))  # a file per run
        for path, run in zip(paths, entries, strict=True):
            (tmp_path / path).write_text(json.dumps([run]), "utf-8")
        found = api_overhead_goal(Recorded(tmp_path, {"openai": Source(paths, bench="openai")}))
        return found.met["openai"], found.figures["openai_plain"], found.figures[
            "openai_streamed"]

    assert goal(entry(-0.3, 4.9)) == (True, "-0.30", "+4.90")
    assert goal(entry(-0.3, 1.0), entry(2.0, 0.5)) == (True, "+2.00", "+1.00")
    assert goal(entry(0.2, 5.1))[0] is False
    assert goal(entry(5.5, -1.0))[0] is False
