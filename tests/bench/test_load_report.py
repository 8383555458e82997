"""bench/load/askers.py's report: `python -m bench load` reads the JSON on its last line (issue 28:
the bench printed only a table, and `python -m bench load` said "failed (exit 0)"); "busy"
refusals are counted apart from errors; a bench's report is kept when it exits non-zero."""

from pathlib import Path

import pytest

from bench.__main__ import last_json, ratios, run_command
from bench.load.askers import BUSY_PAGE, LoadResult, Outcome, printout, report

LOADED = "at once, page + API"


def runs() -> dict[str, LoadResult]:
    alone = LoadResult(1, [Outcome("api", 1.0, "fallback"), Outcome("api", 3.0, "fallback")])
    loaded = LoadResult(4, [
        Outcome("page", 4.0, "fallback"), Outcome("api", 6.0, "abstained"),
        Outcome("page", 0.1, error=f"AppError: {BUSY_PAGE}", busy=True),
        Outcome("api", 0.2, error="HTTP 503: busy", busy=True),
        Outcome("page", 5.0, error="ReadTimeout: timed out"),
    ], wall_s=10.0)
    return {"alone, API": alone, LOADED: loaded}


def test_python_m_bench_reads_the_report_from_the_last_line() -> None:
    out = report(runs(), LOADED, {"date": "2026-12-03 09:00", "askers": 4,
                                  "questions_per_asker": 1, "limit_s": 60.0})
    text = printout(out)
    assert "| at once, page + API | 4 | 5 | 1 | 2 |" in text  # the table, for people
    assert last_json(text) == out
    assert ratios(out) == {"p50_ratio_to_alone": 2.5, "p95_ratio_to_alone": 2.95}


def test_busy_refusals_are_not_errors() -> None:
    loaded = runs()[LOADED]
    assert [o.error for o in loaded.errors] == ["ReadTimeout: timed out"]
    assert [o.via for o in loaded.busy] == ["page", "api"]
    summary = report(runs(), LOADED, {})["runs"][LOADED]
    assert (summary["errors"], summary["busy"]) == (1, 2)
    assert summary["modes"] == {"abstained": 1, "busy": 2, "error": 1, "fallback": 1}
    assert (summary["p50_page_s"], summary["p50_api_s"]) == (4.0, 6.0)  # answered ones only


def bench_printing(tmp_path: Path, name: str, body: str) -> list[str]:
    """The command of a bench that prints `body`'s output."""
    script = tmp_path / f"{name}.py"
    script.write_text(body)
    return ["python", str(script)]


def test_python_m_bench_says_why_a_bench_gave_no_report(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    result = run_command("table", bench_printing(tmp_path, "table", "print('| a | b |')"))
    assert result["report"] is None
    assert "failed (exit 0 but no JSON report)" in capsys.readouterr().out


def test_a_report_with_a_goal_not_met_is_kept_and_shown(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    body = "import json, sys\nprint(json.dumps({'p50_ratio_to_alone': 3.0}))\nsys.exit(1)"
    result = run_command("errors", bench_printing(tmp_path, "errors", body))
    assert result["report"] == {"p50_ratio_to_alone": 3.0} and result["returncode"] == 1
    shown = capsys.readouterr().out
    assert "p50_ratio_to_alone: 3.0" in shown and "failed (exit 1), report kept" in shown
