"""The README's screenshots, made again: the app in demo mode over a few sample documents (the
model unreachable, so answers are retrieval-only and the same every run), driven by headless
Chromium over the DevTools protocol, each picture written to docs/.

    .venv/bin/python -m scripts.screenshots                   # every shot
    .venv/bin/python -m scripts.screenshots table-answer      # the shots whose name is given

Needs chromium and pdftoppm (scripts/install_chromium.sh). To add a picture, append a `Shot` to
SHOTS: a file name under docs/ and a function that gets the page ready (the helpers below ask a
question, open a source, switch tab); the script takes the picture once it returns.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from devtools.chromium import BrowserError, Page, chromium_page, send_question
from devtools.ports import free_port

REPO = Path(__file__).resolve().parents[1]

SAMPLES = REPO / "data" / "samples" / "docs"
# What the shots need: the 差旅费 series (the 2024 table of hotel rates), an English PDF, a .docx.
DOCS = ["差旅费管理办法-2024.pdf", "差旅费管理办法-2023.pdf", "Employee-Leave-Policy.pdf",
        "IT-Security-Policy.docx", "New-Hire-Onboarding-Guide.pdf", "Code-of-Conduct.docx"]
WINDOW = (1280, 1100)
FLAGS = ["--hide-scrollbars", "--force-device-scale-factor=1",
         f"--window-size={WINDOW[0]},{WINDOW[1]}"]


def ask(page: Page, question: str) -> None:
    """Type `question` into the chat and wait for the finished answer."""
    before = page.eval("document.querySelectorAll('#kb-chat .kb-answer').length")
    send_question(page, question)
    page.wait_for(f"document.querySelectorAll('#kb-chat .kb-answer').length > {before}")


def view_source(page: Page) -> None:
    """Open the chosen citation in the source panel; wait for its page image or section."""
    page.eval("document.querySelector('#kb-view').click()")
    page.wait_for("/page|section/.test(document.querySelector('#kb-source')?.innerText || '')")
    page.wait_for("(() => { const i = document.querySelector('#kb-source img.kb-page');"
                  " return !i || (i.complete && i.naturalWidth > 0); })()")


def scroll_chat_to(page: Page, selector: str) -> None:
    """Scroll the chat so that the first element matching `selector` is at its top."""
    page.eval(f"document.querySelector('#kb-chat {selector}').scrollIntoView({{block: 'start'}});"
              "window.scrollTo(0, 0); true")


def table_answer(page: Page) -> None:
    """A Chinese question answered from a PDF table: the source card holds the table rows with
    their header, and the cited page shows the row marked."""
    ask(page, "一线城市出差住宿标准是每晚多少元？")
    view_source(page)
    page.wait_for("!!document.querySelector('#kb-chat .kb-card table.kb-table')")
    scroll_chat_to(page, ".kb-answer")


def word_section(page: Page) -> None:
    """A question answered from a .docx: the source view opens the document at the cited
    section, scrolled to the cited passage with its words marked."""
    ask(page, "What is the minimum password length?")
    view_source(page)
    time.sleep(8.0)  # the frame loads and scrolls to the cited passage (Gradio's HTML
    # component keeps its content where document.querySelector does not reach)
    scroll_chat_to(page, ".kb-card")


def first_page(page: Page) -> None:
    """The empty chat: what the library holds, and example questions from it."""
    page.wait_for("(document.querySelector('#kb-chat')?.innerText || '')"
                  ".includes('The library holds')")


def short_answer(page: Page) -> None:
    """A retrieval-only answer: the sentence that answers first, cited, then the sources once,
    each marking only what answers in it."""
    ask(page, "How many days of unused annual leave can I carry over?")
    view_source(page)
    scroll_chat_to(page, ".kb-answer")


def crosslang_answer(page: Page) -> None:
    """An English question over a Chinese source: the answering sentence, said to be Chinese."""
    ask(page, "What is the hotel limit per night when I travel to Shanghai?")
    scroll_chat_to(page, ".kb-answer")


def nothing_found(page: Page) -> None:
    """Weak evidence: no answer quoted, "I found nothing that answers this", the closest
    passages named."""
    ask(page, "Is there a company rooftop swimming pool for staff?")
    scroll_chat_to(page, ".kb-answer")


def phone(page: Page) -> None:
    """The page on a phone's width: the sidebar starts closed, the chat is usable."""
    page.send("Emulation.setDeviceMetricsOverride", width=390, height=844,
              deviceScaleFactor=1, mobile=True)
    page.send("Page.reload")
    page.wait_for("!!document.querySelector('#kb-question textarea')")
    page.wait_for("document.querySelector('#kb-who')?.innerText.includes('demo')")
    page.wait_for("!document.querySelector('#kb-sidebar')?.classList.contains('open')")
    time.sleep(2.0)  # the page settles after its load events
    ask(page, "How long is the probation period for new employees?")
    scroll_chat_to(page, ".kb-answer")


@dataclass
class Shot:
    name: str  # docs/<name>.png
    prepare: Callable[[Page], None]


SHOTS = [
    Shot("table-answer", table_answer),
    Shot("word-section", word_section),
    Shot("first-page", first_page),
    Shot("screenshot", short_answer),
    Shot("crosslang-answer", crosslang_answer),
    Shot("nothing-found", nothing_found),
    Shot("phone", phone),  # last: it narrows the window
]


# --- the app and the browser -------------------------------------------------------------------
@contextmanager
def demo_app(work: Path) -> Iterator[str]:
    """The app in demo mode over DOCS ingested into a fresh store, model unreachable; its URL."""
    import uvicorn

    from core.config import load_settings
    from ingest.pipeline import ingest_paths
    from ui.web.server import create_server
    from ui.wiring import open_services, store_for

    docs = work / "docs"
    docs.mkdir()
    for name in DOCS:
        shutil.copy2(SAMPLES / name, docs / name)
        sidecar = SAMPLES / (Path(name).stem + ".meta.toml")
        if sidecar.exists():
            shutil.copy2(sidecar, docs / sidecar.name)
    settings = load_settings(REPO / "config.toml").with_store(work / "store")
    settings = dataclasses.replace(settings, llm=dataclasses.replace(
        settings.llm, url=f"http://127.0.0.1:{free_port()}/v1", connect_timeout_s=1.0, retries=0))
    with store_for(settings) as store:
        report = ingest_paths(store, [docs])
    if report.counts.get("failed"):
        raise SystemExit(f"screenshots: ingest failed: {report.outcomes}")
    services = open_services(settings)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_server(services, demo=True), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise SystemExit("screenshots: the app did not start")
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        services.close()


@contextmanager
def chromium(work: Path) -> Iterator[Page]:
    try:
        with chromium_page(work / "profile", FLAGS, wait_timeout_s=300) as page:
            yield page
    except BrowserError as exc:
        raise SystemExit(f"screenshots: {exc}") from exc


def main(names: list[str]) -> None:
    shots = [s for s in SHOTS if not names or s.name in names]
    if not shots:
        raise SystemExit(f"screenshots: no shot named {names}; known: {[s.name for s in SHOTS]}")
    if shutil.which("pdftoppm") is None:
        raise SystemExit("screenshots: pdftoppm is not installed (run scripts/install_chromium.sh)")
    with tempfile.TemporaryDirectory(prefix="kb-shots-") as tmp:
        work = Path(tmp)
        with demo_app(work) as url, chromium(work) as page:
            page.send("Page.enable")
            for shot in shots:
                page.send("Page.navigate", url=url)  # each shot starts on a fresh page
                page.wait_for("!!document.querySelector('#kb-question textarea')")
                page.wait_for("document.querySelector('#kb-who')?.innerText.includes('demo')")
                try:
                    shot.prepare(page)
                except RuntimeError:
                    failed = Path(tempfile.gettempdir()) / f"kb-shot-{shot.name}-failed.png"
                    failed.write_bytes(page.png())
                    print(f"screenshots: {shot.name} failed; the page then: {failed}")
                    raise
                time.sleep(1.0)  # let the last images and scrolling settle
                target = REPO / "docs" / f"{shot.name}.png"
                target.write_bytes(page.png())
                print(f"screenshots: wrote {target.relative_to(REPO)}")


if __name__ == "__main__":
    main(sys.argv[1:])
