"""Screenshots of the conversation sidebar and of the admin view, made by headless Chromium
against the real app, into docs/: re-run it after changing either.

    .venv/bin/python -m scripts.screenshots_conversations            # docs/conversations.png,
                                                                     # docs/admin-insights.png
    .venv/bin/python -m scripts.screenshots_conversations --out /tmp/shots

What it does: ingests data/samples into a temporary store, adds two users (bob, and alice as an
admin), asks bob's questions through the assistant with the model unreachable (retrieval-only
answers, the same on every run) and keeps them as three of his conversations, rates two answers
down, then serves the app on a free port, logs in as bob, opens a conversation from the sidebar
(screenshot), logs in as alice and opens the admin tab's "Questions and knowledge gaps"
(screenshot). Needs Chromium (scripts/install_chromium.sh).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from core.config import Settings, load_settings
from core.offline import offline_environment
from devtools.chromium import CHROMIUM, BrowserError, Page, chromium_page
from devtools.ports import free_port
from ingest.pipeline import ingest_paths
from ui.wiring import open_services

REPO = Path(__file__).resolve().parents[1]

PASSWORDS = {"alice": "alice-password", "bob": "bob-password"}
# bob's conversations, oldest first: each a list of questions
CONVERSATIONS = [
    ["When do I need a doctor's note for sick leave?"],
    ["I left my work laptop on the train. What should I do and how fast?",
     "Who do I call for that?"],
    ["How many days of unused annual leave can I carry over into next year?",
     "By when must I take the carried-over days?"],
]
# more questions for the admin view (some not covered by the documents: knowledge gaps)
MORE = ["Is there a company rooftop swimming pool for staff?",
        "Is there a rooftop pool for employees?", "Can I bring my dog to the office?",
        "How much annual leave do I get after 6 years?", "出差住宿费标准是多少？"]


def seed(settings: Settings) -> None:
    """The store, users, bob's conversations and a few more questions with feedback."""
    services = open_services(settings)
    try:
        ingest_paths(services.store, [REPO / "data" / "samples" / "docs"])
        users, convs, assistant = services.users, services.conversations, services.assistant
        users.add("alice", PASSWORDS["alice"], ["all", "hr"], is_admin=True)
        users.add("bob", PASSWORDS["bob"], ["all"])
        users.set_see_all("alice", True)
        bob = users.get("bob")
        assert bob is not None  # just added
        for questions in CONVERSATIONS:
            cid = convs.start("bob", questions[0])
            for question in questions:
                answer = assistant.ask(question, ["all"], convs.history(bob, cid), "bob")
                convs.add_turn("bob", cid, question, answer)
            time.sleep(1.1)  # distinct times in the sidebar
        for question in MORE:
            answer = assistant.ask(question, ["all"], [], "bob")
            if "dog" in question or "6 years" in question:
                users.record_feedback(answer.question_id, "bob", -1, "not what I asked")
    finally:
        services.close()


def login(page: Page, url: str, user: str) -> None:
    """Sign in through Gradio's /login (the cookie stays in the browser), open the page."""
    page.send("Page.navigate", url=url + "login_check")
    time.sleep(0.5)
    body = json.dumps({"username": user, "password": PASSWORDS[user]})
    ok = page.eval(f"""fetch('/login', {{method: 'POST', credentials: 'same-origin',
        body: new URLSearchParams({body})}}).then(r => r.ok)""")
    if not ok:
        raise SystemExit(f"login of {user} failed")
    page.send("Page.navigate", url=url)
    who = json.dumps(user)
    page.wait_for(f"document.querySelector('#kb-who')?.innerText.includes({who})")


def shot(page: Page, path: Path, width: int, height: int) -> None:
    page.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
              deviceScaleFactor=1, mobile=False)
    time.sleep(1.5)
    data = page.png()
    path.write_bytes(data)
    print(f"{path} ({len(data) // 1024} KiB)")


def click_text(selector: str, text: str) -> str:
    """JS: click the first `selector` element whose text contains `text`."""
    return (f"(() => {{ const el = [...document.querySelectorAll({json.dumps(selector)})]"
            f".find(e => e.innerText.includes({json.dumps(text)})); "
            "if (el) el.click(); return !!el; })()")


def serve_and_shoot(settings: Settings, profile: Path,
                    take: Callable[[Page, int], None]) -> None:
    """Serve the app (with sign-in) on a free port and hand Chromium's page and the port to
    `take`, which takes the pictures."""
    import uvicorn

    from ui.web.server import create_server

    services = open_services(settings)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_server(services, demo=False), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.1)
        with chromium_page(profile, ["--hide-scrollbars", "--window-size=1400,1000"],
                           wait_timeout_s=90) as page:
            take(page, port)
    except BrowserError as exc:
        raise SystemExit(str(exc)) from exc
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        services.close()


def shoot_pages(page: Page, out: Path, port: int) -> None:
    page.send("Page.enable")
    url = f"http://127.0.0.1:{port}/"

    # bob: the sidebar lists his conversations; the one about annual leave is opened
    login(page, url, "bob")
    page.wait_for("document.querySelectorAll('#kb-conversations label').length >= 3")
    page.eval(click_text("#kb-conversations label", "carry over"))
    page.wait_for("document.querySelectorAll('#kb-chat .kb-answer').length >= 2")
    page.wait_for("document.querySelector('#kb-conv-title textarea, #kb-conv-title input')"
                  "?.value.includes('carry over')")
    time.sleep(1.5)  # the chat scrolls itself to the end first: show its beginning
    page.eval("(document.querySelector('#kb-chat [data-testid=\"user\"]') || "
              "document.querySelector('#kb-chat .kb-answer'))"
              ".scrollIntoView({block: 'start'}); window.scrollTo(0, 0); true")
    shot(page, out / "conversations.png", 1400, 1000)

    # alice, an admin: the admin tab's questions and knowledge gaps
    page.send("Network.enable")
    page.send("Network.clearBrowserCookies")
    login(page, url, "alice")
    page.wait_for(click_text("button[role=tab]", "Admin"))
    page.wait_for(click_text("button, .label-wrap, span", "Questions and knowledge gaps"))
    page.wait_for("document.querySelectorAll('.vega-embed, canvas, svg.marks').length >= 1")
    page.wait_for("document.body.innerText.includes('Can I bring my dog')")  # a gap: rated down
    page.wait_for("document.querySelector('#kb-figures')?.innerText.includes('questions')")
    page.eval(click_text("button, .label-wrap, span", "Questions and knowledge gaps")
              .replace("el.click();", "el.scrollIntoView({block: 'start'});"))
    shot(page, out / "admin-insights.png", 1400, 1500)


def make_shots(description: str, seed_store: Callable[[Settings, Path], None],
               take: Callable[[Page, int, Path], None]) -> None:
    """What each screenshot script's main does: `--out`, a temporary store seeded by
    `seed_store(settings, tmp)` with the model server unreachable (retrieval-only answers, the
    same on every run), the app served and `take(page, port, out)` shooting it."""
    parser = argparse.ArgumentParser(description=description)
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
        seed_store(settings, Path(tmp))
        serve_and_shoot(settings, Path(tmp) / "profile",
                        lambda page, port: take(page, port, args.out))


def main() -> None:
    make_shots(__doc__.split("\n\n")[0], lambda settings, _: seed(settings),
               lambda page, port, out: shoot_pages(page, out, port))

if __name__ == "__main__":
    main()
