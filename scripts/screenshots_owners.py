"""The screenshots of what knowledge owners use in the admin tab: the documents with their dates
and the list of those due for review or about to expire (docs/due-for-review.png), and the
editor of approved answers (docs/approved-answers.png), made by headless Chromium against the
real app: re-run it after changing either.

    .venv/bin/python -m scripts.screenshots_owners     # docs/due-for-review.png,
                                                       # docs/approved-answers.png
    .venv/bin/python -m scripts.screenshots_owners --out /tmp/shots

What it does: copies data/samples into a temporary folder and ingests it into a temporary store,
gives a few documents dates counted from today (`kb docs set`'s function: the 2023 travel policy
expired, reviews overdue and due soon, one expiring soon, one not yet in force), approves two
answers and then edits the Code of Conduct, which suspends the one citing it, adds alice as an
admin, serves the app on a free port, logs her in and opens the admin tab at its due list
(screenshot), then the editor: a question, its passages found, one ticked, an answer written
(screenshot). Needs Chromium (scripts/install_chromium.sh).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import docx

from assistant.approved.answers import Draft, Ref
from core.config import Settings
from devtools.chromium import Page
from ingest.dates import set_dates
from ingest.pipeline import ingest_paths
from scripts.screenshots_conversations import PASSWORDS, click_text, login, make_shots, shot
from ui.wiring import open_services

REPO = Path(__file__).resolve().parents[1]


def dates_from(today: dt.date) -> dict[str, dict[str, str]]:
    """The documents' dates, counted from `today` so the list always has each kind."""

    def day(offset: int) -> str:
        return (today + dt.timedelta(days=offset)).isoformat()

    return {
        "差旅费管理办法-2023.pdf": {"expires": "2023-12-31"},
        "IT-Security-Policy.docx": {"review_by": day(-21)},
        "Employee-Leave-Policy.pdf": {"review_by": day(12)},
        "Code-of-Conduct.docx": {"expires": day(25), "review_by": day(400)},
        "New-Hire-Onboarding-Guide.pdf": {"effective": day(29)},
    }


APPROVED = [
    Draft("How many days of unused annual leave can I carry over?",
          "At most 5 days, and they must be taken by 31 March of the next year [1].",
          [Ref("Employee-Leave-Policy.pdf:2",
               "Employees may carry over at most 5 days of unused annual leave")], ["all"],
          ["年假可以结转几天？"]),
    Draft("Can I accept a gift from a supplier?",
          "You may accept gifts worth no more than RMB 300 from any one business partner in a "
          "calendar year [1].", [Ref("Code-of-Conduct.docx", "no more than RMB 300")], ["all"]),
]
# what the editor shows being written
QUESTION = "When do I need a doctor's note for sick leave?"
ANSWER = "For sick leave of more than 2 consecutive working days [1]; upload it to the HR portal."


def seed(settings: Settings, docs: Path) -> None:
    """The sample store (from a copy, `docs`), its dates, two approved answers (one suspended by
    an edit of the document it cites), and alice (an admin who sees every group)."""
    shutil.copytree(REPO / "data" / "samples" / "docs", docs)
    services = open_services(settings)
    try:
        ingest_paths(services.store, [docs])
        for name, dates in dates_from(dt.date.today()).items():
            set_dates(services.store, name, dates)
        for draft in APPROVED:
            services.assistant.save_approved(draft, "alice")
        word = docx.Document(str(docs / "Code-of-Conduct.docx"))
        word.add_paragraph("Gifts above 50 USD are declared to People Ops within 5 days.")
        word.save(str(docs / "Code-of-Conduct.docx"))
        ingest_paths(services.store, [docs])
        services.users.add("alice", PASSWORDS["alice"], ["all", "hr"], is_admin=True)
        services.users.set_see_all("alice", True)
    finally:
        services.close()


def shoot_due(page: Page, out: Path, port: int) -> None:
    page.send("Page.enable")
    login(page, f"http://127.0.0.1:{port}/", "alice")
    page.wait_for(click_text("button[role=tab]", "Admin"))
    page.wait_for("document.querySelector('#kb-due')?.innerText.includes('overdue')")
    page.eval("document.querySelector('#kb-due').scrollIntoView({block: 'end'}); true")
    shot(page, out / "due-for-review.png", 1400, 900)
    shoot_editor(page, out)


def fill(page: Page, selector: str, value: str) -> None:
    """Type `value` into the Gradio text box at `selector`, as a user would."""
    page.eval(f"""(() => {{ const box = document.querySelector({json.dumps(selector)});
        box.value = {json.dumps(value)};
        box.dispatchEvent(new Event('input', {{bubbles: true}})); return true; }})()""")


def shoot_editor(page: Page, out: Path) -> None:
    page.wait_for(click_text("#kb-approved button, #kb-approved .label-wrap", "Approved answers"))
    page.wait_for("document.querySelector('#kb-approved')?.innerText.includes('suspended')")
    fill(page, "#kb-approved-question textarea", QUESTION)
    page.wait_for(click_text("#kb-approved button", "Find passages"))
    page.wait_for("document.querySelectorAll('#kb-approved-cite input').length >= 3")
    page.eval("(() => { const box = [...document.querySelectorAll('#kb-approved-cite label')]"
              ".find(l => l.innerText.includes('doctor')) || "
              "document.querySelector('#kb-approved-cite label'); "
              "box.querySelector('input').click(); return true; })()")
    fill(page, "#kb-approved-text textarea", ANSWER)
    fill(page, "#kb-approved-also textarea", "病假几天需要医生证明？")
    page.eval("document.querySelector('#kb-approved').scrollIntoView({block: 'start'}); true")
    shot(page, out / "approved-answers.png", 1400, 1500)


def main() -> None:
    make_shots(__doc__.split("\n\n")[0], lambda settings, tmp: seed(settings, tmp / "docs"),
               lambda page, port, out: shoot_due(page, out, port))

if __name__ == "__main__":
    main()
