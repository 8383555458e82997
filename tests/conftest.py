"""Fixtures every test folder may use: the shared evaluation material, a session-wide
embedding cache, settings for a fresh store, and the real vLLM CPU server. Tests that start a
server or an outside program through a fixture are marked here (`vllm`, `slow`), so the fast
loop (`scripts/test.sh --fast`) can leave them out without a mark on each test."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from core.config import Settings, load_settings
from core.offline import offline_environment
from devtools.chroma_server import chroma_server  # noqa: F401  (the fixture, for every folder)
from devtools.ldap_server import (  # noqa: F401  (the fixtures, for every folder)
    ldap_directory,
    ldap_tls_directory,
)
from devtools.postgres import ledger_url, postgres  # noqa: F401  (the fixtures, for every folder)
from devtools.vllm_server import vllm_server  # noqa: F401  (the fixture, for every test folder)

REPO = Path(__file__).resolve().parents[1]

offline_environment()


# The fixtures that start a server or an outside program, and the mark a test using one (directly
# or through another fixture) gets.
MARK_BY_FIXTURE = {
    "vllm_server": "vllm",
    "app_server": "slow",  # the app on a local port (tests/ui/conftest.py)
    "demo_server": "slow",
    "login_server": "slow",
    "down_app": "slow",  # the app with its directory (or OpenID provider) down
    "chroma_server": "slow",  # `chroma run`
    "postgres": "slow",  # a throwaway PostgreSQL cluster (devtools/postgres.py)
    "ldap_directory": "slow",  # a throwaway OpenLDAP slapd (devtools/ldap_server.py)
    "ldap_tls_directory": "slow",
    "browser": "slow",  # headless Chromium
    "tesseract": "slow",  # OCR
}
# Parameters that ask for PostgreSQL at run time (request.getfixturevalue("postgres")).
POSTGRES_PARAMS = ("ledger_url", "queue_ledger")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if any(params.get(name) == "postgres" for name in POSTGRES_PARAMS):
            used.add("postgres")
        for mark in sorted({MARK_BY_FIXTURE[name] for name in used & MARK_BY_FIXTURE.keys()}):
            item.add_marker(mark)


def shared_dir() -> Path | None:
    """`KB_SHARED_DIR`, else `../shared` beside the repository; None when absent."""
    found = Path(os.environ.get("KB_SHARED_DIR") or REPO / ".." / "shared").resolve()
    return found if found.is_dir() else None


@pytest.fixture(scope="session")
def shared() -> Path:
    found = shared_dir()
    if found is None:
        pytest.skip("../shared (or KB_SHARED_DIR) is absent: no shared evaluation material")
    return found


@pytest.fixture(scope="session")
def embed_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for the whole run: a text is embedded once, whatever the store."""
    return tmp_path_factory.mktemp("embed") / "cache.sqlite"


@pytest.fixture
def make_settings(tmp_path: Path, embed_cache: Path):  # type: ignore[no-untyped-def]
    """Settings of config.toml with a fresh store under tmp_path and the shared cache."""

    def make(store: Path | None = None, **sections: object) -> Settings:
        base = load_settings(REPO / "config.toml", environ={})
        settings = base.with_store(store or tmp_path / "store")
        settings = dataclasses.replace(
            settings, embed=dataclasses.replace(settings.embed, cache=str(embed_cache))
        )
        for name, values in sections.items():
            current = getattr(settings, name)
            settings = dataclasses.replace(
                settings, **{name: dataclasses.replace(current, **values)}
            )  # type: ignore[arg-type]
        return settings

    return make
