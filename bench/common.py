"""What several benchmarks share: the sample store, the questions, a free port."""

from __future__ import annotations

import json
import shutil
import socket
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from core.config import Settings, load_settings  # noqa: E402

QUESTION_FILES = [
    REPO / "data" / "samples" / "qa.jsonl",
    REPO.parent / "shared" / "eval" / "public" / "qa.jsonl",
]
# The sample documents ingested once and kept between runs (delete the folder to rebuild).
SAMPLE_STORE = Path("/tmp/kb-bench-samples")


def questions(limit: int | None = None) -> list[str]:
    """The sample and public questions, the first `limit` of them; a question file that is
    not there is named on stderr (a checkout away from ../shared asks fewer, other questions,
    and its timings are not comparable)."""
    for path in QUESTION_FILES:
        if not path.exists():
            print(f"bench: {path} not found: its questions are left out", file=sys.stderr)
    out = [
        json.loads(line)["question"]
        for path in QUESTION_FILES
        if path.exists()
        for line in path.read_text("utf-8").splitlines()
    ]
    return out[:limit] if limit else out


def sample_settings() -> Settings:
    settings = load_settings(REPO / "config.toml").with_store(SAMPLE_STORE)
    cache = SAMPLE_STORE.parent / "kb-bench-samples-cache"
    return replace(settings, embed=replace(settings.embed, cache=str(cache)))


def ensure_sample_store() -> Settings:
    """The sample documents ingested into SAMPLE_STORE (once)."""
    from ingest.pipeline import ingest_paths
    from ingest.store import open_store

    settings = sample_settings()
    marker = SAMPLE_STORE / "ingested"
    if not marker.is_file():
        shutil.rmtree(SAMPLE_STORE, ignore_errors=True)
        store = open_store(settings)
        ingest_paths(store, [REPO / "data" / "samples" / "docs"])
        store.close()
        marker.write_text("ok")
    return settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
