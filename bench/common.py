"""What several benchmarks share: the sample store, the questions, the host."""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from core.config import Settings, load_settings
from core.ports import Embedder

REPO = Path(__file__).resolve().parents[1]

QUESTION_FILES = [
    REPO / "data" / "samples" / "qa.jsonl",
    REPO.parent / "shared" / "eval" / "public" / "qa.jsonl",
]
# ../shared/eval beside the checkout, or KB_SHARED_DIR/eval (a worktree elsewhere)
EVAL = Path(os.environ.get("KB_SHARED_DIR") or REPO.parent / "shared") / "eval"
DEV_DOCS = ("public", "public2")  # the dev sets with documents
DEV_SETS = ("public", "public2", "followup", "crosslang")
# each dev set -> the folder of the documents it asks about
SET_DOCS = {"public": "public", "public2": "public2", "followup": "public2", "crosslang": "public2"}
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


def sample_settings(store: Path = SAMPLE_STORE) -> Settings:
    settings = load_settings(REPO / "config.toml").with_store(store)
    cache = store.parent / f"{store.name}-cache"
    return replace(settings, embed=replace(settings.embed, cache=str(cache)))


def ensure_sample_store(store: Path = SAMPLE_STORE) -> Settings:
    """The sample documents ingested into `store` (once; another folder than SAMPLE_STORE for
    a configuration the other benchmarks' store was not made with)."""
    from ingest.pipeline import ingest_paths
    from store.store import open_store

    settings = sample_settings(store)
    marker = store / "ingested"
    if not marker.is_file():
        shutil.rmtree(store, ignore_errors=True)
        opened = open_store(settings)
        ingest_paths(opened, [REPO / "data" / "samples" / "docs"])
        opened.close()
        marker.write_text("ok")
    return settings


def cpu_ticks(stat: str) -> tuple[int, int]:
    """(stolen, all) ticks of every CPU since boot, from the text of /proc/stat: the ticks the
    hypervisor gave to other guests, and all of them (guest time is inside user time).

    cpu_ticks("cpu  100 0 20 870 5 0 1 4 0 0") -> (4, 1000)"""
    fields = [int(x) for x in stat.split("\n", 1)[0].split()[1:9]]
    return (fields[7], sum(fields)) if len(fields) == 8 else (0, 0)


class Host:
    """The machine a run measured on, and what the hypervisor took from it meanwhile. Timings
    compare only on one host: the 1M bench's p95 was 24-40 ms on one of this project's 2-core
    machines (AMD EPYC) and 29-67 ms on another (Intel Xeon), near-idle both and with much the
    same code (docs/benchmarks-history.md, issue 12 sixth and seventh passes).

        host = Host()                    # when the run starts
        report["host"] = host.report()   # {"cpu": "AMD EPYC", "cores": 2, ...}
    """

    STAT = Path("/proc/stat")

    def __init__(self) -> None:
        self._start = self._ticks()

    def _ticks(self) -> tuple[int, int]:
        return cpu_ticks(self.STAT.read_text()) if self.STAT.is_file() else (0, 0)

    def report(self) -> dict[str, object]:
        """CPU model, logical cores, memory, the share of CPU time stolen since the start (None
        without /proc/stat) and the load averages now."""
        stolen, total = (now - then for now, then in zip(self._ticks(), self._start, strict=True))
        cpuinfo = Path("/proc/cpuinfo")
        models = [
            line.split(":", 1)[1].strip()
            for line in (cpuinfo.read_text().splitlines() if cpuinfo.is_file() else [])
            if line.startswith("model name")
        ]
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return {
            "cpu": models[0] if models else platform.processor() or "unknown",
            "cores": os.cpu_count(),
            "memory_gib": round(memory / 2**30, 1),
            "steal_share": round(stolen / total, 4) if total else None,
            "load_average": [round(x, 2) for x in os.getloadavg()],
        }


def dev_passages(settings: Settings, embedder: Embedder) -> list[str]:
    """The passages (`Chunk.embed_text`) of the public and public2 documents, chunked as
    ingestion does with `embedder`'s token counts."""
    from ingest.chunk import chunk_blocks
    from ingest.parse import parse_file
    from ingest.prepare import PREFIX_ROOM

    size = min(settings.ingest.chunk_tokens, embedder.max_tokens - PREFIX_ROOM)
    out: list[str] = []
    for name in DEV_DOCS:
        for path in sorted((EVAL / name / "docs").iterdir()):
            parsed = parse_file(path, settings.ingest)
            chunks = chunk_blocks(path.name, parsed.blocks, embedder.count_tokens_many, size,
                                  settings.ingest.chunk_overlap)
            out += [c.embed_text() for c in chunks]
    return out


def dev_questions() -> list[str]:
    """Every question of the four dev sets, and the earlier questions of each follow-up."""
    out: list[str] = []
    for name in DEV_SETS:
        for line in (EVAL / name / "qa.jsonl").read_text("utf-8").splitlines():
            item = json.loads(line)
            out += [turn["question"] for turn in item.get("history", [])] + [item["question"]]
    return list(dict.fromkeys(out))
