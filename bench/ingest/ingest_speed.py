"""Fresh-ingest speed, unchanged re-index speed, and the LlamaIndex starter in the same run.

Pages: PDF pages plus DOCX pages estimated at 1,800 characters each (both systems get the same
count, so the ratio is the ratio of times). Embedding caches start empty. Both sides' libraries
are imported before any clock starts (the starter's torch and LlamaIndex, our OpenVINO); each
side's model, dictionary and parser loads are inside its time. `--repeat N` runs the two sides
N times, alternating which goes first, and reports each round and the median ratio; CPU seconds
(the process and its parse workers) are reported beside the wall times, as on a shared machine
they move less than wall time does.

    .venv/bin/python -m bench.ingest.ingest_speed ../shared/eval/public/docs
    .venv/bin/python -m bench.ingest.ingest_speed --generated --repeat 2   # corpus_gen.py's
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from assistant.evaluation.baseline import build_starter_index, starter_documents
from bench.ingest.corpus_gen import generated_corpus
from core.config import Settings, load_settings
from core.offline import offline_environment
from ingest.pipeline import ingest_paths
from ingest.reindex import reindex
from store.store import open_store

REPO = Path(__file__).resolve().parents[2]

DOCX_PAGE_CHARS = 1800


def count_pages(folder: Path) -> float:
    pages = 0.0
    for doc in starter_documents(folder):
        if doc.metadata["file_name"].lower().endswith(".pdf"):
            pages += 1
        else:
            pages += max(1.0, len(doc.text) / DOCX_PAGE_CHARS)
    return pages


def import_libraries() -> None:
    """Both sides' heavy imports, before any clock (their loads of models stay inside)."""
    import llama_index.core  # noqa: F401
    import llama_index.embeddings.huggingface  # noqa: F401
    import openvino  # noqa: F401
    import sentence_transformers  # noqa: F401
    import torch  # noqa: F401


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the parse workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(work: Callable[[], Any]) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = work()
    return time.perf_counter() - wall, cpu_seconds() - cpu, result


def settings_for(tmp: Path) -> Settings:
    settings = load_settings(REPO / "config.toml").with_store(tmp / "store")
    return replace(
        settings,
        embed=replace(settings.embed, cache=str(tmp / "cache.sqlite")),
        ingest=replace(settings.ingest, folder_groups={}),
    )


def measure_round(
    folder: Path, pages: float, workers: int, number: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One fresh ingest by kb and by the starter, into a new store, in turns (kb first in even
    rounds); in round 0 also the re-index that finds nothing changed ({} in the others)."""
    tmp = Path(tempfile.mkdtemp(prefix="kb-bench-ingest-"))
    settings = settings_for(tmp)
    store = open_store(settings)

    def ours() -> Any:
        return ingest_paths(store, [folder], workers=workers)

    def starter() -> Any:
        return build_starter_index(settings, folder)

    if number % 2:
        starter_s, starter_cpu, _ = timed(starter)
        ours_s, ours_cpu, report = timed(ours)
    else:
        ours_s, ours_cpu, report = timed(ours)
        starter_s, starter_cpu, _ = timed(starter)
    again_report: dict[str, Any] = {}
    if number == 0:
        again_s, _, again = timed(lambda: reindex(store))
        again_report = {
            "seconds": round(again_s, 2),
            "embedded": again.embedded,
            "speedup_vs_fresh": round(ours_s / again_s, 1),
        }
    store.close()
    return {
        "first": "starter" if number % 2 else "ours",
        "ours": {
            "seconds": round(ours_s, 1),
            "cpu_s": round(ours_cpu, 1),
            "pages_per_s": round(pages / ours_s, 2),
            "chunks_embedded": report.embedded,
        },
        "llamaindex_starter": {
            "seconds": round(starter_s, 1),
            "cpu_s": round(starter_cpu, 1),
            "pages_per_s": round(pages / starter_s, 2),
        },
        "ratio": round(starter_s / ours_s, 2),
        "cpu_ratio": round(starter_cpu / ours_cpu, 2),
    }, again_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?")
    parser.add_argument("--generated", action="store_true", help="corpus_gen.py's corpus")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    if (args.folder is None) == (not args.generated):
        parser.error("give a folder or --generated")
    offline_environment()
    folder = generated_corpus() if args.generated else args.folder
    pages = count_pages(folder)
    import_libraries()
    rounds: list[dict[str, Any]] = []
    again_report: dict[str, Any] = {}
    for number in range(args.repeat):
        row, again = measure_round(folder, pages, args.workers, number)
        rounds.append(row)
        if number == 0:
            again_report = again
        print(json.dumps(row), file=sys.stderr, flush=True)
    print(
        json.dumps(
            {
                "folder": str(folder),
                "pages": round(pages, 1),
                "workers": args.workers,
                "rounds": rounds,
                "reindex_unchanged": again_report,
                "ratio_ours_to_starter": round(statistics.median(r["ratio"] for r in rounds), 2),
                "cpu_ratio_ours_to_starter": round(
                    statistics.median(r["cpu_ratio"] for r in rounds), 2
                ),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
