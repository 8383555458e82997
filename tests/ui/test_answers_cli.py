"""`kb answers` from the command line: add (citing by FILE:PAGE and words, or by chunk id), list
(suspended first, with the reason), edit (re-approves), export and import (a bad line named, the
rest imported), remove; each change in the audit trail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.support.stores import ingest_paths
from ui.cli import main
from ui.wiring import store_for

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "docs"
CARRY = "Employees may carry over at most 5 days of unused annual leave"


def test_answers_from_the_command_line(make_settings: Any, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "Employee-Leave-Policy.pdf", docs)
    settings = make_settings()
    ingest_paths(settings, [docs])
    store = str(settings.store_path())
    env = {"KB_EMBED_CACHE": settings.embed.cache}
    run = CliRunner().invoke

    def kb(*args: str) -> Any:
        return run(main, [*args, "--store", store], env=env)

    added = kb("answers", "add", "--question", "How many leave days carry over?",
               "--answer", "At most 5 [1].", "--cite", "Employee-Leave-Policy.pdf:2",
               "--quote", CARRY, "--groups", "all", "--also", "年假可以结转几天？")
    assert added.exit_code == 0, added.output
    assert "approved answer 1" in added.output
    wrong = kb("answers", "add", "--question", "q?", "--answer", "x",
               "--cite", "Employee-Leave-Policy.pdf:2", "--quote", "no such words")
    assert wrong.exit_code == 1 and "no passage of Employee-Leave-Policy.pdf page 2" in (
        wrong.output)

    listed = kb("answers", "list", "--json")
    one = json.loads(listed.output.splitlines()[0])
    assert one["variants"] == ["年假可以结转几天？"] and one["citations"][0]["page"] == 2
    chunk = one["citations"][0]["chunk_id"]

    edited = kb("answers", "edit", "1", "--answer", "At most 5 days [1].")
    assert edited.exit_code == 0 and "(active)" in edited.output, edited.output
    exported = tmp_path / "answers.jsonl"
    assert kb("answers", "export", str(exported)).exit_code == 0
    line = json.loads(exported.read_text(encoding="utf-8"))
    assert line["answer"] == "At most 5 days [1]." and line["citations"][0]["chunk_id"] == chunk

    bad = tmp_path / "import.jsonl"
    bad.write_text(exported.read_text(encoding="utf-8") + "not json\n"
                   + json.dumps({"question": "q?", "answer": "x", "citations": []}) + "\n",
                   encoding="utf-8")
    imported = kb("answers", "import", str(bad))
    assert imported.exit_code == 1
    assert "line 2: not JSON" in imported.output and "line 3: " in imported.output
    assert "1 approved answers imported, 2 lines failed" in imported.output

    # the cited document goes: both answers suspended, listed first with the reason
    assert kb("delete", "Employee-Leave-Policy.pdf").exit_code == 0
    suspended = kb("answers", "list", "--suspended")
    assert suspended.output.count("SUSPENDED: Employee-Leave-Policy.pdf deleted on") == 2
    assert kb("answers", "remove", "2").exit_code == 0
    assert kb("answers", "remove", "2").exit_code == 1
    with store_for(settings) as opened:
        events = [r.event for r in opened.ledger.audit_records(0, None, "answer.", "")]
    assert {"answer.add", "answer.edit", "answer.export", "answer.import",
            "answer.remove"} <= set(events)
