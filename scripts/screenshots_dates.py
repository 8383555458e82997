"""The screenshot of the admin tab's documents with their dates and the list of those due for
review or about to expire (docs/due-for-review.png), made by headless Chromium against the real
app: re-run it after changing either.

    .venv/bin/python -m scripts.screenshots_dates                # docs/due-for-review.png
    .venv/bin/python -m scripts.screenshots_dates --out /tmp/shots

What it does: ingests data/samples into a temporary store, gives a few documents dates counted
from today (`kb docs set`'s function: the 2023 travel policy expired, reviews overdue and due
soon, one expiring soon, one not yet in force), adds alice as an admin, serves the app on a free
port, logs her in and opens the admin tab at its due list. Needs Chromium
(scripts/install_chromium.sh).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import sys
import tempfile
from pathlib import Path

from core.config import Settings, load_settings
from core.offline import offline_environment
from devtools.chromium import CHROMIUM, Page
from devtools.ports import free_port
from ingest.dates import set_dates
from ingest.pipeline import ingest_paths
from scripts.screenshots_conversations import PASSWORDS, click_text, login, serve_and_shoot, shot
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


def seed(settings: Settings) -> None:
    """The sample store, its dates, and alice (an admin who sees every group)."""
    services = open_services(settings)
    try:
        ingest_paths(services.store, [REPO / "data" / "samples" / "docs"])
        for name, dates in dates_from(dt.date.today()).items():
            set_dates(services.store, name, dates)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs")
    args = parser.parse_args()
    if CHROMIUM is None:
        sys.exit("chromium is not installed: run scripts/install_chromium.sh")
    offline_environment()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kb-shots-") as tmp:
        base = load_settings(REPO / "config.toml", environ={}).with_store(Path(tmp) / "store")
        llm = dataclasses.replace(base.llm, url=f"http://127.0.0.1:{free_port()}/v1",
                                  connect_timeout_s=1.0, retries=0)
        settings = dataclasses.replace(base, llm=llm)
        seed(settings)
        serve_and_shoot(settings, Path(tmp) / "profile", lambda page, port: shoot_due(
            page, args.out, port))


if __name__ == "__main__":
    main()
