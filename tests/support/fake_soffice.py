"""A stand-in for LibreOffice's `soffice`, so `.doc` conversion is tested where LibreOffice is not
installed (CI). It is a script written into a test's folder and put first on PATH; it answers
`--convert-to FORMAT --outdir DIR SOURCE` by copying a known `.docx` to `DIR/<stem>.<FORMAT>`,
where LibreOffice writes its output, and appends its command line to a log. The real LibreOffice
is still tested where it is installed (tests/ingest/test_convert_doc.py).

    fake = install_fake_soffice(tmp_path, monkeypatch)          # converts
    fake = install_fake_soffice(tmp_path, monkeypatch, "fail")  # exits 1, a message on stderr
    fake.calls()  # -> [["-env:UserInstallation=file://…", "--headless", …, "…/old.doc"]]

Behaviours: "convert"; "fail" (exit 1, nothing written, stderr as LibreOffice says it);
"nothing" (exit 0, nothing written); "hang" (sleeps a minute).

Parse workers fork from a server process started once per test process, which keeps the PATH it
started with: a test that parses in workers passes `fake.parser` (parse_file under this PATH) to
ParsePool, or runs `kb` in a new process with `fake.env()`.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import docx
import pytest

from core.config import IngestSettings
from core.types import ParsedDoc

FAILURE = "Error: source file could not be loaded"
# What the known .docx parses to (ingest.parse_docx), as (kind, text).
BLOCKS = [
    ("heading", "Annual leave"),
    ("text", "Employees accrue two days of annual leave per month."),
]

SCRIPT = """#!{python}
import json, shutil, sys, time
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(args) + "\\n")
behaviour = {behaviour!r}
if behaviour == "hang":
    time.sleep(60)
if behaviour == "fail":
    sys.stderr.write("convert " + args[-1] + " -> docx using filter : MS Word 2007 XML\\n")
    sys.stderr.write({failure!r} + "\\n")
    sys.exit(1)
if behaviour == "convert":
    outdir = args[args.index("--outdir") + 1]
    fmt = args[args.index("--convert-to") + 1].split(":")[0]
    stem = args[-1].rsplit("/", 1)[-1].rsplit(".", 1)[0]
    shutil.copyfile({known!r}, outdir + "/" + stem + "." + fmt)
"""


@dataclass(frozen=True)
class FakeSoffice:
    bin: Path  # the folder holding `soffice`
    known: Path  # the .docx it writes
    path: str  # PATH with `bin` first

    def env(self) -> dict[str, str]:
        """This process's environment with the fake first on PATH, for a new process."""
        return {**os.environ, "PATH": self.path}

    def calls(self) -> list[list[str]]:
        """The command lines it was run with (without the program name), oldest first."""
        log = self.bin / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    @property
    def parser(self) -> functools.partial[ParsedDoc]:
        """ingest.parse.parse_file in a parse worker whose PATH has the fake first."""
        return functools.partial(parse_on_path, self.path)


def parse_on_path(path_variable: str, path: Path, settings: IngestSettings) -> ParsedDoc:
    """parse_file(path, settings) with PATH set first (a ParsePool parser: it runs in the
    worker)."""
    from ingest.parse import parse_file

    os.environ["PATH"] = path_variable
    return parse_file(path, settings)


def install_fake_soffice(folder: Path, monkeypatch: pytest.MonkeyPatch,
                         behaviour: str = "convert") -> FakeSoffice:
    """Write the fake `soffice` and its known .docx under `folder`, and put it first on PATH."""
    bin_dir = folder / "fake-soffice"
    bin_dir.mkdir()
    known = bin_dir / "known.docx"
    document = docx.Document()
    document.add_heading(BLOCKS[0][1], level=1)
    document.add_paragraph(BLOCKS[1][1])
    document.save(str(known))
    script = bin_dir / "soffice"
    script.write_text(SCRIPT.format(python=sys.executable, log=str(bin_dir / "calls.jsonl"),
                                    behaviour=behaviour, failure=FAILURE, known=str(known)))
    script.chmod(0o755)
    fake = FakeSoffice(bin_dir, known, f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PATH", fake.path)
    return fake
