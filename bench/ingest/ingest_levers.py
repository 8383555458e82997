"""Fresh-ingest speed per embedder lever, with the LlamaIndex starter, in the same run.

1. fresh ingest with `embed.runtime = "torch"` (sentence-transformers, float32), then with
   `"openvino"` (the default), then the starter: pages/s and the ratio to the starter;
2. the embedding alone over the passages the ingest made: torch, OpenVINO in document order
   (batches as the passages come), OpenVINO with batches sorted by token count (as shipped);
3. identical passage texts (embedded once through the cache).

Each ingest starts with an empty embedding cache; the OpenVINO export is made before the clock
starts (once per model, reused from embed.export_dir) and its time is reported apart.

    .venv/bin/python -m bench.ingest.ingest_levers ../shared/eval/public/docs
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from assistant.evaluation.baseline import build_starter_index
from bench.ingest.ingest_speed import count_pages
from core.config import Settings, load_settings
from core.offline import offline_environment
from ingest.pipeline import ingest_paths
from store.embed.embedder import load_embedder
from store.embed.openvino import OpenVinoEmbedder
from store.store import open_store

REPO = Path(__file__).resolve().parents[2]


def settings_for(tmp: Path, runtime: str) -> Settings:
    settings = load_settings(REPO / "config.toml").with_store(tmp / f"store-{runtime}")
    return replace(
        settings,
        embed=replace(settings.embed, runtime=runtime, cache=str(tmp / f"cache-{runtime}.sqlite")),
        ingest=replace(settings.ingest, folder_groups={}),
    )


def fresh_ingest(settings: Settings, folder: Path, workers: int) -> tuple[float, int, list[str]]:
    store = open_store(settings)
    started = time.perf_counter()
    report = ingest_paths(store, [folder], workers=workers)
    seconds = time.perf_counter() - started
    texts = [
        chunk.embed_text()
        for record in store.ledger.documents()
        for chunk, _ in store.ledger.chunks_of(record.meta.id)
    ]
    store.close()
    return seconds, report.embedded, texts


def timed(embed: object, texts: list[str]) -> float:
    started = time.perf_counter()
    embed(texts)  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    offline_environment()
    pages = count_pages(args.folder)
    tmp = Path(tempfile.mkdtemp(prefix="kb-bench-levers-"))

    started = time.perf_counter()
    openvino = load_embedder(settings_for(tmp, "openvino").embed)  # export (or reuse) it now
    load_s = time.perf_counter() - started
    assert isinstance(openvino, OpenVinoEmbedder), "OpenVINO did not load: see the log line"

    torch_s, torch_n, texts = fresh_ingest(settings_for(tmp, "torch"), args.folder, args.workers)
    ov_s, ov_n, _ = fresh_ingest(settings_for(tmp, "openvino"), args.folder, args.workers)
    started = time.perf_counter()
    build_starter_index(settings_for(tmp, "torch"), args.folder)
    starter_s = time.perf_counter() - started

    torch_embedder = load_embedder(settings_for(tmp, "torch").embed)
    batch = openvino._batch_size
    alone = {
        "torch (sentence-transformers, batches sorted by characters)": timed(
            torch_embedder.embed_batch, texts
        ),
        "openvino, document order": timed(
            lambda ts: [
                openvino.embed_batch(ts[i : i + batch]) for i in range(0, len(ts), batch)
            ],
            texts,
        ),
        "openvino, sorted by tokens (shipped)": timed(openvino.embed_batch, texts),
    }
    tokens = sum(openvino.count_tokens_many(texts))

    def rate(seconds: float) -> dict[str, float]:
        return {"seconds": round(seconds, 1), "pages_per_s": round(pages / seconds, 2)}

    print(
        json.dumps(
            {
                "folder": str(args.folder),
                "pages": round(pages, 1),
                "passages": len(texts),
                "distinct_passage_texts": len(set(texts)),
                "passage_tokens": tokens,
                "openvino_load_or_export_s": round(load_s, 1),
                "ingest": {
                    "torch": {**rate(torch_s), "embedded": torch_n},
                    "openvino": {**rate(ov_s), "embedded": ov_n},
                    "llamaindex_starter": rate(starter_s),
                },
                "ratio_to_starter": {
                    "torch": round(starter_s / torch_s, 2),
                    "openvino": round(starter_s / ov_s, 2),
                },
                "openvino_vs_torch_ingest": round(torch_s / ov_s, 2),
                "embedding_alone_s": {k: round(v, 1) for k, v in alone.items()},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
