"""BENCHMARKS.md is what `python -m bench report` draws from the recorded reports: CI fails while
the page is stale, a figure changed in a report makes it stale, and the tables and goals are
drawn from what the reports say."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import main as bench_main
from bench.recorded import HISTORY, SOURCES, Recorded, Source, files_named, machine, shown, times
from bench.report import PAGE, main, stale_lines
from bench.report_goals import api_overhead_goal, quality_goals, reindex
from bench.report_sections import quality

REPO = Path(__file__).resolve().parents[2]


def test_benchmarks_md_is_what_the_recorded_reports_produce() -> None:
    diff = stale_lines(REPO)
    assert diff == [], "BENCHMARKS.md is stale: run `python -m bench report`\n" + "\n".join(diff)


def test_python_m_bench_report_checks_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main(["report", "--check"]) == 0
    assert "is what the reports produce" in capsys.readouterr().out


def copy_of_the_reports(root: Path) -> Path:
    """A checkout holding only what the page reads: every source's reports and the history."""
    for path in {p for source in SOURCES.values() for p in source.paths} | {HISTORY}:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, root / path)
    return root


def test_a_figure_changed_in_a_report_makes_the_page_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_of_the_reports(tmp_path)
    assert main([], root) == 0
    assert (root / PAGE).read_text("utf-8") == (REPO / PAGE).read_text("utf-8")
    assert main(["--check"], root) == 0
    report = root / SOURCES["ingest"].paths[0]
    entries = json.loads(report.read_text("utf-8"))
    assert entries[0]["report"]["rounds"][0]["ours"]["pages_per_s"] == 17.33
    entries[0]["report"]["rounds"][0]["ours"]["pages_per_s"] = 17.34
    report.write_text(json.dumps(entries), "utf-8")
    capsys.readouterr()
    assert main(["--check"], root) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("-| public documents") and "17.33" in line for line in lines)
    assert any(line.startswith("+| public documents") and "17.34" in line for line in lines)


def test_a_page_edited_by_hand_is_stale(tmp_path: Path) -> None:
    root = copy_of_the_reports(tmp_path)
    main([], root)
    page = root / PAGE
    page.write_text(page.read_text("utf-8").replace("## Goals not met", "## Goals"), "utf-8")
    number = page.read_text("utf-8").splitlines().index("## Goals") + 1
    assert stale_lines(root) == [
        f"--- {PAGE}", "+++ python -m bench report", f"@@ -{number} +{number} @@", "-## Goals",
        "+## Goals not met",
    ]


def scores(hit1: float, counts: str = "refused 1/10, answered 0/2") -> dict[str, Any]:
    return {"hit@1": hit1, "hit@5": 1.0, "mrr@10": 0.9, "in_window": 0.96, "abstain_acc": 0.92,
            "counts": counts}


def made_up(root: Path, public2_hit1: float) -> Recorded:
    """Two made-up `kb eval` reports and an answerability model's note, in `root`."""
    starter = {"en": scores(0.5), "zh": scores(0.25)}
    for name, hit1 in (("public", 0.85), ("public2", public2_hit1)):
        report = {"command": f"kb eval {name} --json", "date": "2030-01-02",
                  "ours": {"en": scores(hit1), "zh": scores(hit1)}, "llamaindex_starter": starter}
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
    lines = quality(made_up(tmp_path, public2_hit1=0.65))
    assert "| public · en | 0.850 | 1.000 | 0.900 | 0.960 | 0.920 | 1/10, 0/2 | 0.500 / 1.000 |" \
        in lines
    assert "| public2 · zh | 0.650 | 1.000 | 0.900 | 0.960 | 0.920 | 1/10, 0/2 | 0.250 / 1.000 |" \
        in lines
    assert "- `kb eval public --json` · any · 2030-01-02 · [`public.json`](public.json)" in lines
    assert "| en | 0.950 | 1/30 | 2/10 | 0.900 / 0.850 | 0.750 |" in lines
    assert "- `kb abstain fit A B` · any · 2030-01-03 · [`model.json`](model.json)" in lines


def test_a_goal_is_met_or_not_by_the_reports_figures(tmp_path: Path) -> None:
    def public2_goal(hit1: float) -> tuple[bool, str]:
        (goal,) = [g for g in quality_goals(made_up(tmp_path, hit1)) if "public2" in g.name]
        return goal.met, goal.measured

    assert public2_goal(0.65) == (False, "en 0.650, zh 0.650")
    assert public2_goal(0.70) == (True, "en 0.700, zh 0.700")
    abstention = quality_goals(made_up(tmp_path, 0.7))[0]
    assert abstention.met  # 0.95 held out in both languages
    assert "2 of 10 unanswerable English" in abstention.measured


def test_a_re_index_goal_met_in_process_only_says_so(tmp_path: Path) -> None:
    entry = {"bench": "reindex", "returncode": 0, "command": "/x/bench/reindex_speed.py",
             "report": {"reindex_1pct_changed": {"speedup_vs_fresh": 30.0},
                        "cli": {"speedup_1pct_vs_fresh": 8.0}}}
    (tmp_path / "r.json").write_text(json.dumps([entry]), "utf-8")
    goal = reindex(Recorded(tmp_path, {"reindex": Source(("r.json",), bench="reindex")}))
    assert not goal.met
    assert goal.measured == ("met in a process that stays up (30×), not as a new `kb reindex` "
                             "command (8×)")


def test_a_run_line_names_the_recorded_command_host_and_date(tmp_path: Path) -> None:
    host = {"cpu": "AMD EPYC", "cores": 2, "steal_share": 0.0004}
    entry = {"bench": "ingest", "returncode": 0, "date": "2030-02-03", "host": host,
             "command": "/work/main/bench/ingest_speed.py /work/shared/eval/public/docs"}
    failed = {**entry, "returncode": 1, "date": "2030-02-04"}
    (tmp_path / "run.json").write_text(json.dumps([failed, entry]), "utf-8")
    rec = Recorded(tmp_path, {"ingest": Source(("run.json",), bench="ingest", date="2029-01-01")})
    assert rec.run_line("ingest", "public") == (
        "- public: `bench/ingest_speed.py ../shared/eval/public/docs` · AMD EPYC, 2 cores, 0.04% "
        "of CPU time stolen · 2030-02-03 · [`run.json`](run.json)")


def test_helpers() -> None:
    assert shown("/work/main/bench/cold_start.py --rounds 5") == "bench/cold_start.py --rounds 5"
    assert files_named(("r/a-1.json", "r/a-2.json")) == "r/a-{1,2}.json"
    assert [times(x) for x in (1.25, 7.9, 37.4, 1057.7)] == ["1.25×", "7.9×", "37.4×", "1,058×"]
    partly = [{"host": {"cpu": "X", "cores": 4, "steal_share": None}}, {}]
    assert machine(partly, "") == "X, 4 cores (host recorded in 1 of 2 reports)"
    with pytest.raises(ValueError, match="needs the machine"):
        machine([{}], "")


def test_a_link_into_the_history_must_find_its_section() -> None:
    rec = Recorded(REPO)
    assert rec.history_link("Ingest speed: `bench/ingest_speed.py`", "x") == (
        f"[x]({HISTORY}#ingest-speed-benchingest_speedpy)")
    with pytest.raises(ValueError, match="no section"):
        rec.history_link("A section that is not there", "x")


def test_the_openai_overhead_goal_is_judged_on_both_ways_of_every_run(tmp_path: Path) -> None:
    def entry(plain: float, streamed: float) -> dict[str, Any]:
        def way(diff: float) -> dict[str, float]:
            return {"p95_diff_ms": diff}

        return {"bench": "openai", "returncode": 0,
                "report": {"goal_ms": 5.0, "openai_vs_api": way(plain),
                           "openai_stream_vs_api_stream": way(streamed)}}

    def goal(*entries: dict[str, Any]) -> tuple[bool, str]:
        paths = tuple(f"o{n}.json" for n in range(len(entries)))  # a file per run
        for path, run in zip(paths, entries, strict=True):
            (tmp_path / path).write_text(json.dumps([run]), "utf-8")
        found = api_overhead_goal(Recorded(tmp_path, {"openai": Source(paths, bench="openai")}))
        return found.met, found.measured

    assert goal(entry(-0.3, 4.9)) == (True, "p95 of `/v1` minus `/api/ask` at worst -0.30 ms "
                                            "plain, +4.90 ms streamed, over 1 runs")
    assert goal(entry(-0.3, 1.0), entry(2.0, 0.5)) == (
        True, "p95 of `/v1` minus `/api/ask` at worst +2.00 ms plain, +1.00 ms streamed, over 2 "
              "runs")
    assert goal(entry(0.2, 5.1))[0] is False
    assert goal(entry(5.5, -1.0))[0] is False
