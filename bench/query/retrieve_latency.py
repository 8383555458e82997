"""Retrieve + pack latency at N chunks with access control on.

Builds (once, cached in --store) a store of N chunks: the sample handbook's real passages,
repeated with words dropped so no two are equal, in 1,000-chunk documents whose access groups
are 70% "all", 20% "hr", 10% "finance"; vectors are the real passage vectors plus noise.
Then times `Retriever.retrieve` + `fill_window` (the packing `kb ask` does: hits, their
neighbours, the window filled; counted with the tiny test model's tokenizer when it is built)
for the sample questions as a user of "all" (sees 70%) and of "finance" (sees 10%), and, as the
baseline in the same run, Chroma's own metadata `where` filter for the same groups. Also
reported: the snapshot's load time (ledger rows -> BM25 matrix, masks) and resident memory.

    .venv/bin/python -m bench.query.retrieve_latency --chunks 100000   # store: /tmp/kb-bench-100k
    nice .venv/bin/python -m bench.query.retrieve_latency --chunks 1000000 --quick
"""

from __future__ import annotations

import argparse
import inspect
import json
import signal
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from assistant.retrieve.retriever import Retriever
from assistant.window import fill_window, snapshot_neighbours
from bench.common import Host
from bench.common import questions as bench_questions
from core.config import load_settings
from core.offline import offline_environment
from core.types import Chunk, DocMeta
from ingest.pipeline import ingest_paths
from store.ledger import Ledger
from store.store import open_store
from store.vectors import group_metadata

REPO = Path(__file__).resolve().parents[2]

# The bench store's HNSW settings (Chroma's collection `configuration`). Chroma persists the
# whole index (and pickles its id map) every `sync_threshold` added vectors: at the default
# 1,000 that rewrite, growing with the collection, is what made the old 1M build crawl.
# 50,000 divides the build's sizes, so a finished store ends persisted; what a stopped build
# added since the last persist is in Chroma's log and still found. Construction and search
# ef, and the graph's degree, stay Chroma's defaults (100, 100, 16).
BENCH_HNSW: dict[str, str | int] = {"space": "cosine", "sync_threshold": 50_000}
PER_DOC = 1000
DOCS_PER_ADD = 5  # 5,000 vectors per Chroma `add` (its maximum batch is 5,461)


class StopFlag:
    """Set by SIGINT/SIGTERM: the build finishes the batch it is writing, then stops."""

    def __init__(self) -> None:
        self.stop = False
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._set)

    def _set(self, signum: int, frame: object) -> None:
        self.stop = True
        print(f"\n{signal.Signals(signum).name}: stopping after this batch", flush=True)


def seed_rows(settings):  # type: ignore[no-untyped-def]
    """The sample handbook's passages (id, text, section, tokens) and their vectors."""
    seed_store = Path(tempfile.mkdtemp(prefix="kb-seed-"))
    source = open_store(settings.with_store(seed_store))
    ingest_paths(source, [REPO / "data" / "samples" / "docs"])
    table = source.ledger.chunk_table()
    rows = list(zip(table.ids, table.texts, table.sections, table.tokens, strict=True))
    matrix = source.vectors.vectors(source.collection, table.ids)
    source.close()
    return rows, matrix


def synthetic_document(d: int, rows, matrix):  # type: ignore[no-untyped-def]
    """Document `d`: 1,000 passages drawn from `rows` with ~15% of words and tokens dropped,
    their vectors the drawn passage's plus noise. Seeded by `d`, so a resumed build makes the
    same documents as an uninterrupted one."""
    rng = np.random.default_rng(d)
    groups = ("all",) if d % 10 < 7 else ("hr",) if d % 10 < 9 else ("finance",)
    meta = DocMeta(
        id=f"doc{d:05d}",
        path=f"synthetic/doc{d:05d}.pdf",
        root="/bench",
        sha256=str(d),
        size=1,
        mtime=0.0,
        title=f"Synthetic {d}",
        groups=groups,
    )
    drawn = rng.integers(0, len(rows), PER_DOC)
    chunks, tokens = [], []
    for i, r in enumerate(drawn):
        _, text, section, toks = rows[r]
        words = text.split(" ")
        keep = rng.random(len(words)) > 0.15
        kept = [w for w, k in zip(words, keep, strict=True) if k] or words
        chunks.append(
            Chunk(f"d{d}c{i}", meta.id, i, " ".join(kept), section, i // 3 + 1, i // 3 + 1)
        )
        keep = rng.random(len(toks)) > 0.15
        tokens.append([t for t, k in zip(toks, keep, strict=True) if k])
    vecs = matrix[drawn] + rng.normal(0, 0.03, (PER_DOC, matrix.shape[1])).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return meta, chunks, tokens, vecs.astype(np.float32)


def build(settings, n_chunks: int) -> None:  # type: ignore[no-untyped-def]
    """Add documents until the store holds `n_chunks`; resumable and stoppable.

    Each batch of 5 documents goes to Chroma first (one `add` of 5,000 vectors), then to the
    ledger (one transaction per document): the ledger is of record, so a document is done
    once the ledger lists it, and a run picks up at the first document it does not list.
    SIGINT/SIGTERM end the run after the batch in hand, never inside a Chroma write. Vectors
    of a batch a hard kill cut short (in Chroma, not in the ledger) are upserted again."""
    flag = StopFlag()
    store = open_store(settings)
    done = {r.meta.id for r in store.ledger.documents()}
    todo = [d for d in range(n_chunks // PER_DOC) if f"doc{d:05d}" not in done]
    if not todo:
        store.close()
        return
    rows, matrix = seed_rows(settings)
    # the real index (a lazily opened one, where the store has that, opened now)
    vectors = store.vectors.index() if hasattr(store.vectors, "index") else store.vectors
    vectors.create(store.collection, BENCH_HNSW)  # unless a stopped build made it
    first = True
    started = time.perf_counter()
    for b in range(0, len(todo), DOCS_PER_ADD):
        if flag.stop:
            break
        docs = [synthetic_document(d, rows, matrix) for d in todo[b : b + DOCS_PER_ADD]]
        ids = [c.id for _, chunks, _, _ in docs for c in chunks]
        vecs = np.concatenate([v for *_, v in docs])
        metas = [group_metadata(m.id, m.groups) for m, chunks, _, _ in docs for _ in chunks]
        t = time.perf_counter()
        cpu = time.process_time()
        if first and vectors.existing(store.collection, ids):
            vectors.upsert(store.collection, ids, vecs, metas)
        else:
            vectors.add(store.collection, ids, vecs, metas)
        first = False
        chroma_s, chroma_cpu = time.perf_counter() - t, time.process_time() - cpu
        t = time.perf_counter()
        for meta, chunks, tokens, _ in docs:
            store.ledger.replace_document(meta, chunks, tokens)
        print(
            f"{store.ledger.chunk_count()} chunks, {time.perf_counter() - started:.0f} s: "
            f"chroma add {chroma_s:.1f} s ({chroma_cpu:.1f} CPU s), "
            f"ledger {time.perf_counter() - t:.1f} s",
            flush=True,
        )
    store.close()
    if flag.stop:
        print("stopped cleanly; run the same command again to resume", flush=True)
        raise SystemExit(130)


# What `Retriever.retrieve` reports (`timings_ms`; a stage an older retriever lacks reads 0),
# then the packing this script times itself. "dense" is the wait for the dense side after the
# lexical work it runs beside; dense_embed and dense_search are what it took on its thread.
STAGES = ("lexical", "lexical_more", "dense", "dense_embed", "dense_search", "retrieve", "pack")


def use_openvino_questions(store, settings) -> str:  # type: ignore[no-untyped-def]
    """Questions on the passage embedder's OpenVINO export, as a warm app embeds them:
    main's `store.embed.question_openvino` (its PRECISION) where this checkout has it, else
    `OpenVinoEmbedder` (bfloat16 on AMX, one thread a question: what the 2026-12-01 1M runs
    used)."""
    # looked for by file: the editable install's finder would find main's copy of a module
    # this checkout lacks
    if (REPO / "ingest" / "question_openvino.py").is_file():
        from store.embed.question_openvino import PRECISION, open_openvino_question_encoder

        encoder, how = open_openvino_question_encoder(settings.embed), f"openvino {PRECISION}"
    else:
        from store.embed.embedder import export_root, resolve_model_path
        from store.embed.openvino import OpenVinoEmbedder

        folder = Path(resolve_model_path(settings.embed.model))
        encoder = OpenVinoEmbedder(settings.embed, export_root(settings.embed), folder)
        how = "openvino bfloat16"
    if encoder is None:
        raise SystemExit("no OpenVINO export of the embedder: run `kb ingest` once first")
    store._question_encoder, store._questions = encoder, None
    return how


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def rss_mib() -> tuple[float, float]:
    """This process's resident memory now and at its peak, MiB (Linux)."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return (
        int(fields["VmRSS"].split()[0]) / 1024,
        int(fields["VmHWM"].split()[0]) / 1024,
    )


def window_count(settings):  # type: ignore[no-untyped-def]
    """The tiny test model's tokenizer when it is built (`.cache/test-model`: an exact count, as
    with a local answering model), else the estimate `kb` plans with without one; and the
    counter's `prime` (None for the estimate), which the app's retriever counts ahead with."""
    from assistant.window import estimate_tokens

    model = REPO / ".cache" / "test-model"
    if not (model / "config.json").is_file():
        return estimate_tokens, "estimate_tokens", None
    from assistant.llm.tokens import LocalTokenCounter

    counter = LocalTokenCounter(model, trust_remote_code=True)
    return counter.count, "test-model tokenizer", counter.prime


def main(argv: list[str] | None = None) -> dict[str, object]:
    args = parse_args(argv)
    offline_environment()
    settings = built_store(args)
    questions = bench_questions(40 if args.quick else None)
    settings = measured_settings(settings, args.lexical_only)
    count, counted_by, prime = window_count(settings)
    rss_before, _ = rss_mib()
    store = open_store(settings)
    encoder = "numpy" if not args.questions_openvino else use_openvino_questions(store, settings)
    # as `Assistant` builds it: the lexical candidates' lines counted while the dense side runs
    count_ahead = None if args.no_count_ahead else prime
    retriever = (
        Retriever(settings, store, count_ahead=count_ahead)
        if "count_ahead" in inspect.signature(Retriever).parameters
        else Retriever(settings, store)  # a checkout before it
    )
    t = time.perf_counter()
    snap = retriever.snapshot()
    load_s = time.perf_counter() - t
    rss_snapshot, _ = rss_mib()
    retriever.retrieve("warm up", ["all"])
    retriever.retrieve("年假怎么休", ["all"])  # jieba's dictionary, as a warm app has it (WarmUp)
    report: dict[str, object] = {
        "chunks": len(snap.ids),
        "lexical_only": args.lexical_only,
        "snapshot_load_s": round(load_s, 2),
        "rss_mib_before_store": round(rss_before),
        "rss_mib_after_snapshot": round(rss_snapshot),
        "counted_by": counted_by,
        "question_encoder": encoder,
        "count_ahead": count_ahead is not None,
        "questions": len(questions),
    }
    host = Host()
    where = not (args.lexical_only or args.no_where)
    for groups in (["all"], ["finance"]):
        report[",".join(groups)] = measure(
            retriever, snap, store, settings, count, groups, questions, where=where
        )
    rss_end, rss_peak = rss_mib()
    report["rss_mib_end"] = round(rss_end)
    report["rss_mib_peak"] = round(rss_peak)
    report["host"] = host.report()
    store.close()
    print(json.dumps(report, indent=1))
    return report


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--store", type=Path, default=None, help="default /tmp/kb-bench-100k, …-1m")
    parser.add_argument("--quick", action="store_true", help="40 questions per group set")
    parser.add_argument("--no-build", action="store_true", help="measure the store as it is")
    parser.add_argument(
        "--lexical-only",
        action="store_true",
        help="dense weight 0 and no Chroma baseline: the snapshot, masks, BM25 and packing alone",
    )
    parser.add_argument(
        "--no-where",
        action="store_true",
        help="skip the baseline (Chroma's `where` filter: minutes at 1M chunks)",
    )
    parser.add_argument(
        "--questions-openvino",
        action="store_true",
        help="embed questions on the passage embedder's OpenVINO export, as the app does",
    )
    parser.add_argument(
        "--no-count-ahead",
        action="store_true",
        help="the retriever does not count the lexical candidates' lines while it waits for its "
        "dense side (as before the issue 12 third pass)",
    )
    return parser.parse_args(argv)


def built_store(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """config.toml's settings on the bench store (--store, else /tmp/kb-bench-100k, -1m, ...),
    built up to --chunks unless --no-build."""
    size = f"{args.chunks // 10**6}m" if args.chunks % 10**6 == 0 else f"{args.chunks // 1000}k"
    store_dir = args.store or Path(f"/tmp/kb-bench-{size}")
    settings = load_settings(REPO / "config.toml").with_store(store_dir)
    settings = replace(
        settings, embed=replace(settings.embed, cache=str(store_dir / "bench-cache.sqlite"))
    )
    ledger = Ledger(settings.store_path() / "ledger.sqlite")
    have = ledger.chunk_count()
    ledger.close()
    if have < args.chunks and not args.no_build:
        build(settings, args.chunks)
    return settings


def measured_settings(settings, lexical_only: bool):  # type: ignore[no-untyped-def]
    """The settings measured: a fresh question-vector cache each run (every question is
    embedded as it would be live), and dense weight 0 for --lexical-only."""
    fresh_cache = Path(tempfile.mkdtemp(prefix="kb-qcache-")) / "cache.sqlite"
    settings = replace(settings, embed=replace(settings.embed, cache=str(fresh_cache)))
    if lexical_only:
        settings = replace(settings, retrieve=replace(settings.retrieve, dense_weight=0.0))
    return settings


def measure(  # type: ignore[no-untyped-def]
    retriever, snap, store, settings, count, groups: list[str], questions: list[str], *,
    where: bool,
) -> dict[str, object]:
    """Each question retrieved and packed as a user of `groups` (`snap` the retriever's
    snapshot, `count` the window's token count) and, with `where`, Chroma's own `where` filter
    for the same groups: the percentiles, and each stage's."""
    ours: list[float] = []
    chroma: list[float] = []
    flags = {f"g_{g}": True for g in groups}
    t_first = time.perf_counter()
    retriever.retrieve("warm up", groups)  # loads this group set's mask (and vectors)
    first_ms = (time.perf_counter() - t_first) * 1000
    stages: dict[str, list[float]] = {k: [] for k in STAGES}
    for q in questions:
        q = f"{q} ({groups[0]})"  # a new text per group: no cached question vector
        t0 = time.perf_counter()
        retrieval = retriever.retrieve(q, groups)
        t1 = time.perf_counter()
        fill_window(
            retrieval.passages, q, retrieval.lang, count, settings, snapshot_neighbours(snap)
        )
        ours.append((time.perf_counter() - t0) * 1000)
        for stage in STAGES[:-1]:
            stages[stage].append(retrieval.timings_ms.get(stage, 0.0))
        stages["pack"].append((time.perf_counter() - t1) * 1000)
        if where:
            vector = store.embed_question([q])[0]
            t2 = time.perf_counter()
            store.vectors.query(store.collection, vector, 50, where=flags)
            chroma.append((time.perf_counter() - t2) * 1000)
    chroma = chroma or [float("nan")]
    return {
        "visible_chunks": int(snap.allowed(groups).sum()),
        "first_query_ms": round(first_ms, 1),
        "retrieve_pack_p50_ms": round(percentile(ours, 50), 1),
        "retrieve_pack_p95_ms": round(percentile(ours, 95), 1),
        "stage_p50_ms": {k: round(percentile(v, 50), 1) for k, v in stages.items()},
        "stage_p95_ms": {k: round(percentile(v, 95), 1) for k, v in stages.items()},
        "chroma_where_only_p50_ms": round(percentile(chroma, 50), 1),
        "chroma_where_only_p95_ms": round(percentile(chroma, 95), 1),
        "ratio_chroma_p95_to_ours_p95": round(percentile(chroma, 95) / percentile(ours, 95), 2),
        "queries": len(ours),
    }


if __name__ == "__main__":
    main()
