"""Fixtures for the app tests: a real store ingested from data/samples, users, and the real app
served by uvicorn in a thread on a free port (one backed by the vLLM test server, one in demo
mode with the model unreachable)."""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings, load_settings
from devtools.chromium import CHROMIUM, Page, chromium_page
from devtools.ports import free_port
from devtools.system_deps import skip_or_fail
from ui.wiring import open_services, users_for

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"
# A few sample files (English and Chinese, PDF and DOCX) and hr-only/ keep ingestion short.
SUBSET = ["Employee-Leave-Policy.pdf", "IT-Security-Policy.docx", "差旅费管理办法-2023.pdf",
          "差旅费管理办法-2024.pdf",
          "hr-only"]

PASSWORDS = {"alice": "alice-password", "bob": "bob-password"}


@dataclass
class Store:
    settings: Settings
    docs: Path
    tokens: dict[str, str]


@pytest.fixture(scope="session", autouse=True)
def gradio_temp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Gradio's temp folder for this run, not the machine's shared /tmp/gradio, made as Gradio
    makes its own (0755): the app has to make it private itself."""
    folder = tmp_path_factory.mktemp("gradio")
    folder.chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADIO_TEMP_DIR", str(folder))
        yield folder


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """data/samples (a subset) ingested with the repository's config: hr-only/ is group hr.
    Users: alice (all, hr, admin) and bob (all)."""
    from tests.support.stores import ingest_paths

    if not SAMPLES.is_dir():
        pytest.skip(f"{SAMPLES} is missing (run scripts/make_samples.py)")
    root = tmp_path_factory.mktemp("ui-store")
    docs = root / "docs"
    docs.mkdir()
    for name in SUBSET:
        src = SAMPLES / name
        if src.is_dir():
            shutil.copytree(src, docs / name)
        elif src.exists():
            shutil.copy2(src, docs / name)
            for sidecar in SAMPLES.glob(Path(name).stem + "*.meta.toml"):
                shutil.copy2(sidecar, docs / sidecar.name)
    settings = load_settings(REPO / "config.toml", environ={}).with_store(root / "store")
    assert settings.ingest.folder_groups.get("hr-only") == ("hr",), "config.toml maps hr-only"
    report = ingest_paths(settings, [docs])
    assert report.counts["failed"] == 0, report.outcomes
    with users_for(settings) as users:
        users.add("alice", PASSWORDS["alice"], ["all", "hr"], is_admin=True)
        users.add("bob", PASSWORDS["bob"], ["all"])
        tokens = {name: users.new_token(name) for name in PASSWORDS}
    return Store(settings, docs, tokens)


@dataclass
class Running:
    url: str
    settings: Settings
    tokens: dict[str, str]
    assistant: Any
    app: Any  # ui.page.app.App: the handlers, for calls a browser cannot make
    guard: Any = None  # ui.identity.login.LoginGuard of the server (tests reset it)

    def client(self, user: str | None) -> Any:
        from gradio_client import Client

        auth = (user, PASSWORDS[user]) if user else None
        return Client(self.url, auth=auth, verbose=False, download_files=False)


def _serve(settings: Settings, demo: bool,
           wrap: Callable[[Any], Any] | None = None) -> Iterator[Running]:
    """The app served on a free port; `wrap` puts an ASGI layer of the test's in front."""
    import uvicorn

    from ui.web.server import UVICORN_OPTIONS, create_server

    services = open_services(settings)
    assistant = services.assistant
    app = create_server(services, demo=demo)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(wrap(app) if wrap else app, host="127.0.0.1",
                                           port=port, **UVICORN_OPTIONS))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the app did not start within 60 s", pytrace=False)
        time.sleep(0.05)
    try:
        yield Running(f"http://127.0.0.1:{port}/", settings, {}, assistant, app.state.kb_app,
                      getattr(app.state, "login_guard", None))
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        services.close()


@pytest.fixture(scope="session")
def app_server(sample_store: Store, vllm_server: Any) -> Iterator[Running]:
    """The app with login, answering through the vLLM test server."""
    settings = dataclasses.replace(sample_store.settings, llm=vllm_server.llm)
    for running in _serve(settings, demo=False):
        running.tokens = sample_store.tokens
        yield running


@pytest.fixture(scope="session")
def demo_server(sample_store: Store) -> Iterator[Running]:
    """The app in demo mode (no login) with the model unreachable: retrieval-only answers."""
    llm = dataclasses.replace(sample_store.settings.llm, url=f"http://127.0.0.1:{free_port()}/v1",
                              connect_timeout_s=1.0, retries=0)
    settings = dataclasses.replace(sample_store.settings, llm=llm)
    yield from _serve(settings, demo=True)


def _login_settings(store: Store, **ui_changes: Any) -> Settings:
    """The sample store's settings with the model unreachable (retrieval-only answers, no vLLM
    needed) and a small login lockout (3 failures per user, 30 per address)."""
    llm = dataclasses.replace(store.settings.llm, url=f"http://127.0.0.1:{free_port()}/v1",
                              connect_timeout_s=1.0, retries=0)
    small = {"login_max_failures": 3, "login_max_failures_per_address": 30,
             "login_lockout_s": 60.0, "login_concurrency": 1, **ui_changes}
    ui = store.settings.ui
    ui = dataclasses.replace(ui, **{k: v for k, v in small.items() if hasattr(ui, k)})
    return dataclasses.replace(store.settings, llm=llm, ui=ui)


@pytest.fixture(scope="session")
def login_server(sample_store: Store) -> Iterator[Running]:
    """The app with login and the model unreachable, a small login lockout, for the trust
    tests. No trusted proxies: a client's address is its socket's peer."""
    for running in _serve(_login_settings(sample_store), demo=False):
        running.tokens = sample_store.tokens
        yield running


@pytest.fixture(scope="session")
def proxied_server(sample_store: Store) -> Iterator[Running]:
    """`login_server` behind a reverse proxy on 127.0.0.1 (`ui.trusted_proxies`): the client is
    the address that proxy names in X-Forwarded-For."""
    settings = _login_settings(sample_store, trusted_proxies=("127.0.0.1",))
    for running in _serve(settings, demo=False):
        running.tokens = sample_store.tokens
        yield running


@pytest.fixture
def fresh_guard(login_server: Any) -> Iterator[Any]:
    """The login throttle's ledger, emptied before and after the test (both servers share it)."""
    login_server.guard.reset()
    yield login_server.guard
    login_server.guard.reset()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Page]:
    """A headless Chromium page (skipped without Chromium, failed under
    KB_REQUIRE_SYSTEM_DEPS=1, as in CI)."""
    if CHROMIUM is None:
        skip_or_fail("chromium is not installed (run scripts/install_chromium.sh)")
    with chromium_page(tmp_path / "profile", ["--window-size=1280,1250"],
                       reply_timeout_s=30) as page:
        yield page
