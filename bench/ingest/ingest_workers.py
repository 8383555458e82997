"""Fresh-ingest time with 1 worker, 2 workers (`kb ingest --workers 2`) and 2 queue workers
(`kb ingest --queue` + two `kb worker --drain --threads N` processes), in the same run, each into
its own store with an empty embedding cache; ratios against 1 worker. Every time includes
loading the embedder (in each process that embeds) and, for the queue, starting the workers.

    .venv/bin/python -m bench.ingest.ingest_workers ../shared/eval/public/docs
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from core.config import Settings, load_settings
from core.offline import offline_environment
from core.types import IngestReport
from ingest.pipeline import ingest_paths
from ingest.queue import wait_for_batch
from ingest.workers import threads_per_worker
from store.store import open_store

REPO = Path(__file__).resolve().parents[2]


def settings_in(folder: Path) -> Settings:
    settings = load_settings(REPO / "config.toml").with_store(folder / "store")
    return replace(
        settings,
        embed=replace(settings.embed, cache=str(folder / "cache.sqlite")),
        ingest=replace(settings.ingest, folder_groups={}, queue_poll_s=0.2),
    )


def local(settings: Settings, docs: Path, workers: int) -> IngestReport:
    store = open_store(settings)
    try:
        return ingest_paths(store, [docs], workers=workers)
    finally:
        store.close()


def queued(settings: Settings, docs: Path, workers: int) -> IngestReport:
    store = open_store(settings)
    try:
        report = ingest_paths(store, [docs], queue=True)
        env = {
            **os.environ,
            "KB_EMBED_CACHE": settings.embed.cache,
            "KB_INGEST_FOLDER_GROUPS": "{}",
            "KB_INGEST_QUEUE_POLL_S": "0.2",
        }
        command = [sys.executable, "-c", "from ui.cli import main; main()", "worker", "--drain",
                   "--threads", str(threads_per_worker(workers)),
                   "--store", str(settings.store_path())]
        processes = [
            subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL)
            for _ in range(workers)
        ]
        report = wait_for_batch(store, report)
        for process in processes:
            process.wait()
        return report
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    offline_environment()
    tmp = Path(tempfile.mkdtemp(prefix="kb-bench-workers-"))
    runs = {
        "1 worker": lambda s: local(s, args.folder, 1),
        "2 workers": lambda s: local(s, args.folder, 2),
        "2 queue workers": lambda s: queued(s, args.folder, 2),
    }
    results: dict[str, dict[str, float]] = {}
    for i, (name, run) in enumerate(runs.items()):
        settings = settings_in(tmp / str(i))
        started = time.perf_counter()
        report = run(settings)
        seconds = time.perf_counter() - started
        results[name] = {
            "seconds": round(seconds, 1),
            "files": len(report.outcomes),
            "ingested": report.counts["ingested"],
            "failed": report.counts["failed"],
            "passages_embedded": report.embedded,
        }
    base = results["1 worker"]["seconds"]
    for row in results.values():
        row["speedup_vs_1_worker"] = round(base / row["seconds"], 2)
    print(json.dumps({"folder": str(args.folder), "cpus": os.cpu_count(),
                      "load_average_at_end": os.getloadavg(), "runs": results}, indent=1))


if __name__ == "__main__":
    main()
