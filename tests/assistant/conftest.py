"""The assistant's tests share the sample store: data/samples/docs ingested into a fresh store of
the test (real Chroma, real files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.stores import ingest_paths

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "docs"


@pytest.fixture
def sample_settings(make_settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Settings of a store holding the sample documents."""
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES, docs)
    settings = make_settings()
    ingest_paths(settings, [docs])
    return settings
