"""A sync pass over 10,000 unchanged files (issue 27: at most 10 s): a folder of small files in
100 sub-folders, already known to the ledger, kept in sync as one `[[sources]]` entry
(ingest/sync/folder.py); beside it, in the same run, what an admin runs today after each change: `kb
ingest FOLDER` over the same unchanged folder (`ingest_paths`).

The ledger's rows are seeded through the ledger's own API (`Ledger.replace_document`, one
document per file, no passages) rather than by ingesting 10,000 real documents: a pass over
unchanged files reads no file's content, so what the files hold does not change what is timed.
The first pass after the source is configured goes through `ingest_paths` once (its groups and
sidecars are new to it) and is reported apart; the timed passes are the ones after it.

    .venv/bin/python -m bench.ingest.sync_unchanged --files 10000 --passes 5
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from bench.common import Host
from core.config import load_settings
from core.offline import offline_environment
from core.settings.sources import SourceSettings
from core.types import DocMeta
from ingest.discover import doc_id_for
from ingest.pipeline import ingest_paths
from ingest.sync.folder import sync_source
from ui.wiring import store_for

REPO = Path(__file__).resolve().parents[2]
WORK = Path("/tmp/kb-bench-sync")
GOAL_S = 10.0


def make_folder(root: Path, files: int) -> list[str]:
    """`files` small files in 100 sub-folders; their paths under `root`."""
    paths = []
    for i in range(files):
        rel = f"team-{i % 100:02d}/policy-{i:05d}.pdf"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(f"%PDF-1.4 policy {i}\n".encode())
        paths.append(rel)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--passes", type=int, default=5, help="timed passes")
    args = parser.parse_args()
    offline_environment()
    host = Host()
    shutil.rmtree(WORK, ignore_errors=True)
    root = (WORK / "share").resolve()
    paths = make_folder(root, args.files)
    settings = load_settings(REPO / "config.toml", environ={}).with_store(WORK / "store")
    source = SourceSettings("bench", str(root), ("all",), 60.0)
    settings = dataclasses.replace(settings, sources=(source,))
    report: dict[str, Any] = {"files": args.files, "passes": args.passes, "ledger": "sqlite"}
    with store_for(settings) as store:
        started = time.perf_counter()
        for rel in paths:
            stat = (root / rel).stat()
            store.ledger.replace_document(DocMeta(
                id=doc_id_for(str(root), rel), path=rel, root=str(root), sha256=f"{rel}-sha",
                size=stat.st_size, mtime=stat.st_mtime, groups=("all",)), [], [])
        report["seed_s"] = round(time.perf_counter() - started, 2)
        now = time.time()
        started = time.perf_counter()
        first = sync_source(store, source, 0.2, now)
        report["first_pass_s"] = round(time.perf_counter() - started, 2)
        timed = []
        for n in range(1, args.passes + 1):
            started = time.perf_counter()
            done = sync_source(store, source, 0.2, now + 60 * n)
            timed.append(time.perf_counter() - started)
            assert (done.state, done.seen, done.changed) == ("ok", args.files, 0), done
        started = time.perf_counter()
        baseline = ingest_paths(store, [root], ["all"])
        report["kb_ingest_unchanged_s"] = round(time.perf_counter() - started, 2)
        assert baseline.counts["unchanged"] == args.files, baseline.counts
    report["first_pass_state"] = first.state
    report["pass_s"] = {"median": round(statistics.median(timed), 3),
                        "max": round(max(timed), 3), "all": [round(t, 3) for t in timed]}
    report["speedup_vs_kb_ingest"] = round(report["kb_ingest_unchanged_s"] / max(timed), 1)
    report["goal"] = f"a pass over {args.files} unchanged files <= {GOAL_S} s"
    report["goal_met"] = max(timed) <= GOAL_S
    report["host"] = host.report()
    shutil.rmtree(WORK, ignore_errors=True)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
