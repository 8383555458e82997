"""Fresh ingest with the embedder on the GPU against the same ingest with it on the CPU, in the
same run, for each worker count: pages/s and the GPU/CPU ratio (issue 12, goal 5). Meant for
the lent GPU machine (docs/gpu.md says how kb's ingest stack gets there); on a machine without
a GPU it runs the CPU rows only.

Each run ingests the folder into a fresh store with an empty embedding cache, with
`embed.runtime = "torch"` (the runtime kb uses on a GPU) and `--workers N` (N parse and N
embedding processes); its time includes loading the embedder in each process. Pages: PDF pages
plus DOCX pages estimated at 1,800 characters each, as bench/ingest/ingest_speed.py counts them, but
read with pypdf and python-docx (the LlamaIndex readers are not needed there).

    python -m bench.ingest.gpu_ingest DOCS --workers 1,8 --model /tmp/minilm
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from core.config import Settings, load_settings
from core.offline import offline_environment
from ingest.pipeline import ingest_paths
from store.store import open_store

REPO = Path(__file__).resolve().parents[2]

DOCX_PAGE_CHARS = 1800


def count_pages(folder: Path) -> float:
    """PDF pages, plus each Word file's characters / 1,800 (at least one page per file); a file
    its reader cannot open counts for nothing (kb's ingest fails it too)."""
    import docx
    from pypdf import PdfReader

    pages = 0.0
    for path in sorted(folder.rglob("*")):
        try:
            if path.suffix.lower() == ".pdf":
                pages += len(PdfReader(path).pages)
            elif path.suffix.lower() == ".docx":
                document = docx.Document(str(path))
                chars = sum(len(p.text) for p in document.paragraphs)
                chars += sum(len(c.text) for t in document.tables for r in t.rows for c in r.cells)
                pages += max(1.0, chars / DOCX_PAGE_CHARS)
        except Exception:  # noqa: BLE001 - an unreadable file is part of a real corpus
            continue
    return pages


def settings_for_run(folder: Path, device: str, model: str | None) -> Settings:
    settings = load_settings(REPO / "config.toml").with_store(folder / "store")
    embed = replace(settings.embed, device=device, runtime="torch",
                    cache=str(folder / "cache.sqlite"), model=model or settings.embed.model)
    return replace(settings, embed=embed, ingest=replace(settings.ingest, folder_groups={}))


def timed_ingest(settings: Settings, docs: Path, workers: int) -> dict[str, float]:
    started = time.perf_counter()
    store = open_store(settings)
    try:
        report = ingest_paths(store, [docs], workers=workers)
    finally:
        store.close()
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 2), "ingested": report.counts["ingested"],
            "failed": report.counts["failed"], "passages_embedded": report.embedded}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--workers", default="1,8", help="comma-separated worker counts")
    parser.add_argument("--model", default=None, help="embed.model (default: config.toml's)")
    args = parser.parse_args()
    offline_environment()
    import torch

    devices = ["cuda", "cpu"] if torch.cuda.is_available() else ["cpu"]
    pages = count_pages(args.folder)
    tmp = Path(tempfile.mkdtemp(prefix="kb-bench-gpu-ingest-"))
    runs: dict[str, dict[str, float]] = {}
    for workers in (int(w) for w in args.workers.split(",")):
        for device in devices:
            name = f"{device}, {workers} worker(s)"
            row = timed_ingest(settings_for_run(tmp / name.replace(" ", "_"), device, args.model),
                               args.folder, workers)
            row["pages_per_s"] = round(pages / row["seconds"], 2)
            runs[name] = row
            print(name, row, file=sys.stderr, flush=True)
        if len(devices) == 2:
            cpu, gpu = runs[f"cpu, {workers} worker(s)"], runs[f"cuda, {workers} worker(s)"]
            runs[f"cuda, {workers} worker(s)"]["ratio_gpu_vs_cpu"] = round(
                cpu["seconds"] / gpu["seconds"], 2)
    gpu_name = torch.cuda.get_device_name(0) if len(devices) == 2 else None
    print(json.dumps({"folder": str(args.folder), "pages": round(pages, 1), "cpus": os.cpu_count(),
                      "gpu": gpu_name, "torch": torch.__version__, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
