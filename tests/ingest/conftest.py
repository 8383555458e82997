"""Fixtures for the ingest tests: generated PDF/DOCX files and the shared evaluation material."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


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
