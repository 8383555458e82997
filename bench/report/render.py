"""`python -m bench report`: BENCHMARKS.md and the detail section of docs/benchmarks-history.md,
their templates filled in from the recorded reports, or checked.

    python -m bench report            # write both
    python -m bench report --check    # exit 1, with the lines that differ, when either is stale

The words are the templates' (BENCHMARKS.template.md, history.template.md, beside this file);
each `{{section.name}}` in them is a figure, a table's rows or a run line that the section
modules compute from the reports bench/report/recorded.py's SOURCES names. A placeholder no
section fills, a value no template uses, or a link into the history that finds no heading there
is an error. tests/bench/test_report.py runs the check, so CI fails while a page differs from
what the reports produce.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Callable
from pathlib import Path

from bench.report.crosslang import crosslang
from bench.report.goals import values as goals
from bench.report.library import library
from bench.report.owners import owners
from bench.report.recorded import HISTORY, REPO, Recorded, anchor
from bench.report.sections import followups, gpu, ingest, latency, quality
from bench.report.servers import api_overhead, bodies, channels, load, mcp_overhead, retention
from bench.report.signin import signin

PAGE = "BENCHMARKS.md"
HERE = Path(__file__).parent
TEMPLATES = {PAGE: HERE / "BENCHMARKS.template.md", HISTORY: HERE / "history.template.md"}
# the history's section that `python -m bench report` writes, between these lines
START = "<!-- written by `python -m bench report` from bench/report/history.template.md -->"
END = "<!-- end of what `python -m bench report` writes -->"
PLACEHOLDER = re.compile(r"\{\{([\w.]+)\}\}")
HISTORY_LINK = re.compile(re.escape(HISTORY) + r"#([\w-]+)\)")
ROOT_LINK = re.compile(r"\]\((?!https?:|#|\.\./)")  # a link from the repository root

SECTIONS: dict[str, Callable[[Recorded], dict[str, str]]] = {
    "quality": quality, "followup": followups, "crosslang": crosslang, "ingest": ingest,
    "latency": latency, "gpu": gpu, "load": load, "api": api_overhead, "signin": signin,
    "bodies": bodies, "channels": channels, "owners": owners, "mcp": mcp_overhead,
    "retention": retention, "library": library,
}


def values(rec: Recorded) -> dict[str, str]:
    """Every placeholder's value: `{{section.name}}` -> its figure, rows or run line."""
    found = goals(rec)
    for section, part in SECTIONS.items():
        found.update({f"{section}.{name}": value for name, value in part(rec).items()})
    return found


def fill(template: str, found: dict[str, str], name: str) -> str:
    """The template with each `{{key}}` replaced by its value.

    fill("p95 {{a.b}} ms", {"a.b": "3.2"}, "t") -> "p95 3.2 ms"
    """
    missing = sorted(set(PLACEHOLDER.findall(template)) - found.keys())
    if missing:
        raise ValueError(f"{name}: no section fills {', '.join(missing)}")
    return PLACEHOLDER.sub(lambda m: found[m[1]], template)


def render(root: Path = REPO) -> dict[str, str]:
    """BENCHMARKS.md and docs/benchmarks-history.md as the reports under `root` produce them."""
    found = values(Recorded(root))
    templates = {path: template.read_text("utf-8") for path, template in TEMPLATES.items()}
    unused = found.keys() - {key for text in templates.values()
                             for key in PLACEHOLDER.findall(text)}
    if unused:
        raise ValueError(f"values no template uses: {', '.join(sorted(unused))}")
    page = fill(templates[PAGE], found, PAGE)
    before, after = split_history((root / HISTORY).read_text("utf-8"))
    detail = ROOT_LINK.sub("](../", fill(templates[HISTORY], found, HISTORY))  # from docs/
    history = f"{before}{START}\n{detail}{END}{after}"
    headings = {anchor(line.lstrip("#").strip()) for line in history.splitlines()
                if line.startswith("#")}
    broken = [target for target in HISTORY_LINK.findall(page) if target not in headings]
    if broken:
        raise ValueError(f"{PAGE} links to {HISTORY} sections that are not there: {broken}")
    return {PAGE: page, HISTORY: history}


def split_history(text: str) -> tuple[str, str]:
    """The history before and after the section the report writes."""
    before, start, rest = text.partition(START + "\n")
    _, end, after = rest.partition(END)
    if not (start and end):
        raise ValueError(f"{HISTORY} lacks the lines that mark the section written here: "
                         f"{START!r} and {END!r}")
    return before, after


def stale_lines(root: Path = REPO) -> list[str]:
    """Where the files differ from what the reports produce, as a unified diff; empty when they
    are what the reports produce."""
    diff: list[str] = []
    for path, wanted in render(root).items():
        current = (root / path).read_text("utf-8").splitlines() if (root / path).is_file() else []
        diff += difflib.unified_diff(current, wanted.splitlines(), path, "python -m bench report",
                                     n=0, lineterm="")
    return diff


def main(argv: list[str] | None = None, root: Path = REPO) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench report",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 and print the lines that differ when stale")
    args = parser.parse_args(argv)
    if args.check:
        diff = stale_lines(root)
        if diff:
            print(f"{PAGE} or {HISTORY} is not what the reports produce (run `python -m bench "
                  "report`):")
            print("\n".join(diff))
            return 1
        print(f"{PAGE} and {HISTORY} are what the reports produce")
        return 0
    written = render(root)
    for path, text in written.items():
        (root / path).write_text(text, "utf-8")
    print(f"{PAGE} written from the reports ({len(written[PAGE].splitlines())} lines), and "
          f"{HISTORY}'s section of the current results in detail")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
