"""Fresh-ingest speed, unchanged re-index speed, and the LlamaIndex starter in the same run.

Pages: PDF pages plus DOCX pages estimated at 1,800 characters each (both systems get the same
count, so the ratio is the ratio of times). Embedding caches start empty.

    .venv/bin/python bench/ingest_speed.py ../shared/eval/public/docs
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from assistant.evaluation.baseline import build_starter_index, starter_documents  # noqa: E402
from core.config import load_settings  # noqa: E402
from ingest.pipeline import ingest_paths  # noqa: E402
from ingest.reindex import reindex  # noqa: E402
from ingest.store import open_store  # noqa: E402
from ui.cli_common import offline_environment  # noqa: E402

DOCX_PAGE_CHARS = 1800


def count_pages(folder: Path) -> float:
    pages = 0.0
    for doc in starter_documents(folder):
        if doc.metadata["file_name"].lower().endswith(".pdf"):
            pages += 1
        else:
            pages += max(1.0, len(doc.text) / DOCX_PAGE_CHARS)
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    offline_environment()
    pages = count_pages(args.folder)
    tmp = Path(tempfile.mkdtemp(prefix="kb-bench-ingest-"))
    settings = load_settings(REPO / "config.toml").with_store(tmp / "store")
    settings = replace(
        settings,
        embed=replace(settings.embed, cache=str(tmp / "cache.sqlite")),
        ingest=replace(settings.ingest, folder_groups={}),
    )

    store = open_store(settings)
    t0 = time.perf_counter()
    report = ingest_paths(store, [args.folder], workers=args.workers)
    ours_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    again = reindex(store)
    reindex_s = time.perf_counter() - t1
    store.close()
    t2 = time.perf_counter()
    build_starter_index(settings, args.folder)
    starter_s = time.perf_counter() - t2

    print(
        json.dumps(
            {
                "folder": str(args.folder),
                "pages": round(pages, 1),
                "ours": {
                    "seconds": round(ours_s, 1),
                    "pages_per_s": round(pages / ours_s, 2),
                    "chunks_embedded": report.embedded,
                },
                "reindex_unchanged": {
                    "seconds": round(reindex_s, 2),
                    "embedded": again.embedded,
                    "speedup_vs_fresh": round(ours_s / reindex_s, 1),
                },
                "llamaindex_starter": {
                    "seconds": round(starter_s, 1),
                    "pages_per_s": round(pages / starter_s, 2),
                },
                "ratio_ours_to_starter": round(starter_s / ours_s, 2),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
