"""`python -m bench report`: BENCHMARKS.md written from the recorded reports, or checked.

    python -m bench report            # write BENCHMARKS.md
    python -m bench report --check    # exit 1, with the lines that differ, when it is stale

The reports are those bench/recorded.py's SOURCES names; bench/report_sections.py draws the
tables from them and bench/report_goals.py judges the goals. tests/bench/test_report.py runs the
check, so CI fails while the page differs from what the reports produce.
"""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path

from bench.recorded import Recorded
from bench.report_crosslang import crosslang
from bench.report_goals import goals_section
from bench.report_mcp import mcp_overhead
from bench.report_owners import owners
from bench.report_sections import (
    api_overhead,
    audit_and_logins,
    followups,
    gpu,
    head,
    ingest,
    latency,
    load,
    quality,
    reproduce,
)
from bench.report_signin import signin

REPO = Path(__file__).resolve().parents[1]

PAGE = "BENCHMARKS.md"


def render(root: Path = REPO) -> str:
    """BENCHMARKS.md as the reports of the checkout at `root` produce it."""
    rec = Recorded(root)
    parts = (head(rec), goals_section(rec), quality(rec), followups(rec), ingest(rec),
             latency(rec), gpu(rec), load(rec), api_overhead(rec), mcp_overhead(rec), signin(rec),
             audit_and_logins(rec), owners(rec), crosslang(rec), reproduce())
    return "\n".join(line for part in parts for line in part).rstrip("\n") + "\n"


def stale_lines(root: Path = REPO) -> list[str]:
    """Where BENCHMARKS.md differs from what the reports produce, as a unified diff; empty when
    it is what they produce."""
    path = root / PAGE
    current = path.read_text("utf-8").splitlines() if path.is_file() else []
    wanted = render(root).splitlines()
    return list(difflib.unified_diff(current, wanted, PAGE, "python -m bench report", n=0,
                                     lineterm=""))


def main(argv: list[str] | None = None, root: Path = REPO) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench report",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 and print the lines that differ when stale")
    args = parser.parse_args(argv)
    if args.check:
        diff = stale_lines(root)
        if diff:
            print(f"{PAGE} is not what the reports produce (run `python -m bench report`):")
            print("\n".join(diff))
            return 1
        print(f"{PAGE} is what the reports produce")
        return 0
    text = render(root)
    (root / PAGE).write_text(text, "utf-8")
    print(f"{PAGE} written from the reports ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
