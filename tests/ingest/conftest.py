"""Fixtures for the ingest tests: generated PDF/DOCX files and the shared evaluation material."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


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
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The files of tests/data/make_fixtures.py, generated once per session."""
    spec = importlib.util.spec_from_file_location(
        "make_fixtures", REPO / "tests" / "data" / "make_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built: dict[str, Path] = module.build(tmp_path_factory.mktemp("fixtures"))
    return built
