"""The embedding levers of a fresh ingest alone, on the passages of a folder, in the same run:

1. per document, one batch at a time on all cores (how `kb ingest` embedded before waves);
2. in waves of `ingest.embed_wave` passages of several documents, sorted by token count, one
   batch at a time on all cores (the batching lever alone);
3. the same waves on OpenVINO's throughput streams, one batch per core (as shipped);
4. the whole folder as one wave on the streams (the most batching can give).

Each way runs `--repeat` times, the ways interleaved; the median wall and CPU seconds are
reported, with the tokens each way computes (padding included) against the passages' own.
Identical passage texts are counted too (the embedding cache computes each once).

    .venv/bin/python -m bench.ingest.embed_waves ../shared/eval/public/docs --repeat 3
    .venv/bin/python -m bench.ingest.embed_waves --generated
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.ingest.corpus_gen import generated_corpus
from core.config import load_settings
from core.errors import IngestError
from core.offline import offline_environment
from core.types import DocMeta
from ingest.parse import ParsePool
from ingest.prepare import chunk_document
from store.embed.embedder import load_embedder
from store.embed.openvino import OpenVinoEmbedder, pool

REPO = Path(__file__).resolve().parents[2]


def passages(folder: Path, embedder: OpenVinoEmbedder) -> list[list[str]]:
    """The passage texts of each file of `folder`, as the ingest makes them."""
    settings = load_settings(REPO / "config.toml")
    paths = sorted(p for p in folder.rglob("*") if p.is_file())
    out: list[list[str]] = []
    with ParsePool(settings.ingest) as parsers:
        for path, parsed in parsers.imap(paths):
            if isinstance(parsed, IngestError):
                continue
            meta = DocMeta(
                id=path.stem, path=path.name, root=str(folder), sha256="", size=0, mtime=0.0
            )
            _, chunks, _ = chunk_document(settings, embedder, meta, parsed)
            out.append([c.embed_text() for c in chunks])
    return out


def waves_of(docs: Sequence[list[str]], wave: int) -> list[list[str]]:
    """Documents gathered into waves of at least `wave` passages (the last one smaller)."""
    out: list[list[str]] = [[]]
    for texts in docs:
        out[-1].extend(texts)
        if len(out[-1]) >= wave:
            out.append([])
    return [w for w in out if w]


def one_batch_at_a_time(embedder: OpenVinoEmbedder, texts: Sequence[str]) -> None:
    """Sorted batches, each on all cores (the latency-compiled model), one after another."""
    ids = embedder._encode_ids(texts)
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    request = embedder._compile("latency").create_infer_request()
    size = embedder._batch_size
    for start in range(0, len(order), size):
        feeds, mask = embedder._feeds(ids, order[start : start + size])
        pool(np.asarray(request.infer(feeds)[0], dtype=np.float32), mask, embedder._cls)


def computed_tokens(lengths: Sequence[Sequence[int]], batch: int) -> int:
    """Tokens the model computes when each group is sorted and cut into batches (padding in).

    computed_tokens([[3, 1, 2]], 2) -> 3 * 2 + 1 * 1 = 7
    """
    total = 0
    for group in lengths:
        ordered = sorted(group, reverse=True)
        total += sum(
            ordered[s] * len(ordered[s : s + batch]) for s in range(0, len(ordered), batch)
        )
    return total


def timings(
    ways: dict[str, Callable[[], Any]], repeat: int
) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds of each way, `repeat` times, the ways in turn."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    for _ in range(repeat):
        for name, work in ways.items():
            wall, cpu = time.perf_counter(), time.process_time()
            work()
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return times


def tokens_of(
    embedder: OpenVinoEmbedder, docs: list[list[str]], waves: list[list[str]]
) -> dict[str, int]:
    """The passages' tokens, and those the model computes per document, in waves and in one
    wave (padding in)."""
    size = embedder._batch_size
    everything = [t for d in docs for t in d]

    def lengths(groups: Sequence[Sequence[str]]) -> list[list[int]]:
        return [[len(i) for i in embedder._encode_ids(g)] for g in groups]

    return {
        "passages": sum(len(i) for i in embedder._encode_ids(everything)),
        "per document": computed_tokens(lengths(docs), size),
        "waves": computed_tokens(lengths(waves), size),
        "one wave": computed_tokens(lengths([everything]), size),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?")
    parser.add_argument("--generated", action="store_true", help="corpus_gen.py's corpus")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if (args.folder is None) == (not args.generated):
        parser.error("give a folder or --generated")
    offline_environment()
    folder = generated_corpus() if args.generated else args.folder
    settings = load_settings(REPO / "config.toml")
    embedder = load_embedder(settings.embed)
    if not isinstance(embedder, OpenVinoEmbedder):
        raise SystemExit("OpenVINO did not load: see the log line")
    docs = passages(folder, embedder)
    waves = waves_of(docs, settings.ingest.embed_wave)
    everything = [t for d in docs for t in d]
    ways: dict[str, Callable[[], Any]] = {
        "1 per document, one batch at a time": lambda: [
            one_batch_at_a_time(embedder, d) for d in docs
        ],
        "2 waves, one batch at a time": lambda: [one_batch_at_a_time(embedder, w) for w in waves],
        "3 waves, throughput streams (shipped)": lambda: [embedder.embed_batch(w) for w in waves],
        "4 one wave, throughput streams": lambda: embedder.embed_batch(everything),
    }
    embedder.embed_batch(everything[:64])  # compile both models before any clock
    one_batch_at_a_time(embedder, everything[:8])
    times = timings(ways, args.repeat)
    tokens = tokens_of(embedder, docs, waves)
    print(
        json.dumps(
            {
                "folder": str(folder),
                "documents": len(docs),
                "passages": len(everything),
                "distinct_passage_texts": len(set(everything)),
                "wave": settings.ingest.embed_wave,
                "waves": len(waves),
                "computed_tokens": tokens,
                "median_s": {
                    name: {
                        "wall": round(statistics.median(w for w, _ in runs), 2),
                        "cpu": round(statistics.median(c for _, c in runs), 2),
                    }
                    for name, runs in times.items()
                },
                "ratio_waves_vs_per_document_wall": round(
                    statistics.median(w for w, _ in times["1 per document, one batch at a time"])
                    / statistics.median(
                        w for w, _ in times["3 waves, throughput streams (shipped)"]
                    ),
                    2,
                ),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
