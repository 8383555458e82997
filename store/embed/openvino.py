"""The embedder on OpenVINO: the sentence-transformers model converted once, offline, from its
own folder to OpenVINO IR, kept on disk, and run with sentence-transformers' pooling.

    embedder = OpenVinoEmbedder(settings, export_root)   # converts on first use, then reuses
    embedder.embed_batch(["年假可以结转吗？"]).shape -> (1, 384)

Passages are embedded in float32 on every CPU (`PRECISION`): left to itself OpenVINO picks
bfloat16 where the CPU has it (AMX, AVX512-BF16), and the stored vectors, hence retrieval's
ranks, would depend on the machine that ingested. Against sentence-transformers on torch in
float32 the vectors keep a cosine above 0.999
(tests/store/test_embed_runtime.py). Texts are batched by token count, longest first, so a
batch pads to lengths close to its own. Only models made of a Transformer, a mean or CLS
Pooling and an optional Normalize are converted; `Unsupported` says why another is not, and
`store.embed.embedder.open_embedder` then falls back to torch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.config import EmbedSettings
from core.ports import Vectors

logger = logging.getLogger(__name__)

EXPORT_VERSION = "2"  # bump when the conversion below changes: old exports are ignored
MODEL_FILE = "model.xml"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
SINGLE_THREAD_UP_TO = 2  # a question or two runs on one thread (see store/embed/embedder.py)
# INFERENCE_PRECISION_HINT of the passage models: float32 whatever the CPU offers (the default
# is bfloat16 on AMX and AVX512-BF16 CPUs, float32 on the others)
PRECISION = "f32"


class Unsupported(Exception):
    """This model cannot run on OpenVINO here; the message says why."""


def local_folder(name: str) -> Path:
    """The model's folder on disk: a local path, or a hub name already in the local cache."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception as exc:  # noqa: BLE001  any failure means: not on disk
        raise Unsupported(f"{name} is not a local folder nor in the hub cache") from exc


def pooling_of(folder: Path) -> str:
    """The pooling ("mean" or "cls") of a Transformer → Pooling (→ Normalize) model."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        raise Unsupported("no modules.json (not a sentence-transformers folder)")
    modules = json.loads(modules_file.read_text(encoding="utf-8"))
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise Unsupported(f"modules {kinds} (only Transformer, Pooling, Normalize convert)")
    st_config = folder / "config_sentence_transformers.json"
    if st_config.is_file():
        prompt = json.loads(st_config.read_text(encoding="utf-8")).get("default_prompt_name")
        if prompt:
            raise Unsupported(f"a default prompt ({prompt!r})")
    config = json.loads((folder / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
    mode = config.get("pooling_mode")
    if mode is None:
        legacy = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean"}
        on = [k for k, v in config.items() if k.startswith("pooling_mode_") and v is True]
        mode = legacy.get(on[0]) if len(on) == 1 else None
    if mode not in ("mean", "cls"):
        raise Unsupported(f"pooling {mode or config!r} (only mean and cls convert)")
    return str(mode)


def export_dir(root: Path, folder: Path) -> Path:
    """Where the export of `folder` lives: named by the folder and its files' sizes and times,
    so a changed model is converted again."""
    import openvino

    files = sorted(p for p in folder.iterdir() if p.is_file())
    stamp = [str(folder.resolve()), EXPORT_VERSION, openvino.__version__]
    stamp += [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files]
    digest = hashlib.sha1("\n".join(stamp).encode()).hexdigest()[:16]
    return root / f"{folder.name}-{digest}"


def export(folder: Path, target: Path) -> None:
    """Convert the model's Transformer to OpenVINO IR in `target` (atomically: a reader never
    sees half an export; two processes converting at once both succeed)."""
    import openvino
    import torch
    from sentence_transformers import SentenceTransformer

    started = time.perf_counter()
    model = SentenceTransformer(str(folder), device="cpu")
    tokenizer = model.tokenizer
    if not getattr(tokenizer, "is_fast", False):
        raise Unsupported("no fast (Rust) tokenizer to run without transformers")
    sample = tokenizer(
        ["an example", "a longer example sentence"], padding=True, return_tensors="pt"
    )
    names = [k for k in INPUTS if k in sample]
    transformer: Any = model[0].auto_model  # the Hugging Face model inside
    transformer.eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on constant shapes checks: none apply
        converted = openvino.convert_model(transformer, example_input={k: sample[k] for k in names})
    staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    openvino.save_model(converted, staging / MODEL_FILE, compress_to_fp16=False)
    tokenizer.save_pretrained(str(staging / "tokenizer"))
    (staging / "embedder.json").write_text(
        json.dumps(
            {
                "inputs": names,
                "pooling": pooling_of(folder),
                "max_tokens": int(model.max_seq_length or 512),
                "dim": int(model.get_embedding_dimension() or 0),
                "pad_id": int(tokenizer.pad_token_id or 0),
            }
        ),
        encoding="utf-8",
    )
    try:
        staging.rename(target)
    except OSError:  # another process finished first: keep its export
        shutil.rmtree(staging, ignore_errors=True)
    logger.info(
        "embedder %s converted to OpenVINO in %.1fs: %s",
        folder.name,
        time.perf_counter() - started,
        target,
    )


@dataclass(frozen=True)
class Export:
    """What `export` wrote beside the model (embedder.json), read back."""

    folder: Path
    dim: int
    max_tokens: int
    inputs: tuple[str, ...]
    cls: bool  # CLS pooling, else mean
    pad_id: int

    @classmethod
    def read(cls, folder: Path) -> Export:
        info = json.loads((folder / "embedder.json").read_text(encoding="utf-8"))
        return cls(
            folder=folder,
            dim=int(info["dim"]),
            max_tokens=int(info["max_tokens"]),
            inputs=tuple(info["inputs"]),
            cls=info["pooling"] == "cls",
            pad_id=int(info["pad_id"]),
        )

    def tokenizer(self, truncate: bool = True) -> Any:
        """The model's own Rust tokenizer, without transformers (whose import costs seconds),
        unpadded; truncated to the model's length (for embedding) or not (for counting)."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer" / "tokenizer.json"))
        tokenizer.no_padding()
        if truncate:
            tokenizer.enable_truncation(self.max_tokens)
        else:
            tokenizer.no_truncation()
        return tokenizer


def pool(hidden: Vectors, mask: np.ndarray[Any, Any], cls: bool) -> Vectors:
    """Unit vectors of a batch's hidden states: the first token's (`cls`) or the mean of those
    the mask keeps, as sentence-transformers pools.

    pool(np.ones((1, 3, 2)), np.ones((1, 3)), cls=False) -> [[0.7071, 0.7071]]
    """
    if cls:
        pooled = hidden[:, 0]
    else:
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return np.asarray(pooled / np.clip(norms, 1e-12, None), dtype=np.float32)


def padded(
    rows: Sequence[Sequence[int]], width: int, pad_id: int, inputs: Sequence[str]
) -> tuple[dict[str, np.ndarray[Any, Any]], np.ndarray[Any, Any]]:
    """The model's `inputs` for token id `rows` padded to `width` with `pad_id`, and the
    attention mask that hides the padding (token types all 0).

    padded([[101, 7, 102]], 4, 0, ["input_ids"])[0]["input_ids"] -> [[101, 7, 102, 0]]
    """
    input_ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for row, tokens in enumerate(rows):
        input_ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    feeds = {"input_ids": input_ids, "attention_mask": mask}
    return {k: feeds.get(k, np.zeros_like(input_ids)) for k in inputs}, mask


def compile_cached(
    core: Any, model_file: str, cache: Path, config: dict[str, Any], width: int | None = None
) -> Any:
    """`core.compile_model(model_file, "CPU", config)`, the compiled model kept in a folder of
    `cache` of its own per config (and the CPU's default precision). OpenVINO 2026.4 names a
    cached model by the model alone and imported one compiled in float32 for a bfloat16 config:
    vectors of noise, NaN, or a crash ("double free or corruption"), whichever compiled first.
    With `width`, the model is compiled for that one shape: a batch of one text of `width`
    tokens (every input), in a folder of its own too.

    compile_cached(core, "export/model.xml", Path("export/compiled"), {"INFERENCE_NUM_THREADS": 1})
    """
    default = core.get_property("CPU", "INFERENCE_PRECISION_HINT")
    shape = {"shape": [1, width]} if width else {}
    stamp = json.dumps({**config, **shape, "default precision": str(default)}, sort_keys=True)
    folder = cache / hashlib.sha1(stamp.encode()).hexdigest()[:12]
    model: Any = model_file
    if width:
        model = core.read_model(model_file)
        model.reshape({port.get_any_name(): [1, width] for port in model.inputs})
    return core.compile_model(model, "CPU", {**config, "CACHE_DIR": str(folder)})


class OpenVinoEmbedder:
    """The `Embedder` interface on an OpenVINO export of a sentence-transformers model."""

    def __init__(self, settings: EmbedSettings, export_root: Path, folder: Path) -> None:
        import openvino

        pooling_of(folder)  # Unsupported before any work
        target = export_dir(export_root, folder)
        if not (target / "embedder.json").is_file():
            logger.info("converting embedder %s to OpenVINO (once) into %s", folder, target)
            export(folder, target)
        info = Export.read(target)
        self.name = settings.model
        self.dim = info.dim
        self.max_tokens = info.max_tokens
        self._inputs = list(info.inputs)
        self._cls = info.cls
        self._batch_size = settings.batch_size
        self._pad_id = info.pad_id
        self._tokenizer = info.tokenizer()  # for embedding
        self._counter = info.tokenizer(truncate=False)  # for counting
        self._core = openvino.Core()
        # compiled models are kept beside the export: a later process imports instead of compiling
        self._cache = target / "compiled"
        self._model_file = str(target / MODEL_FILE)
        self._compiled: dict[str, Any] = {}  # use -> compiled model (see _compile)
        logger.info(
            "embedder %s loaded on OpenVINO (%s, dim %d, max %d tokens)",
            self.name,
            PRECISION,
            self.dim,
            self.max_tokens,
        )

    def _compile(self, key: str) -> Any:
        """The model compiled for one use: "single" (one thread: a question or two), "latency"
        (all cores on one batch), "throughput" (one stream per core, batches side by side)."""
        if key not in self._compiled:
            configs: dict[str, dict[str, Any]] = {
                "single": {"INFERENCE_NUM_THREADS": 1},
                "latency": {},
                "throughput": {"PERFORMANCE_HINT": "THROUGHPUT"},
            }
            config = {**configs[key], "INFERENCE_PRECISION_HINT": PRECISION}
            self._compiled[key] = compile_cached(self._core, self._model_file, self._cache, config)
        return self._compiled[key]

    def _encode_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self._tokenizer.encode_batch([t.strip() for t in texts])]

    def _feeds(
        self, ids: list[list[int]], batch: list[int]
    ) -> tuple[dict[str, np.ndarray[Any, Any]], np.ndarray[Any, Any]]:
        """Inputs of one batch, padded to its longest text, and its attention mask."""
        rows = [ids[i] for i in batch]
        return padded(rows, max(len(r) for r in rows), self._pad_id, self._inputs)

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors, batches made of texts of similar token counts (longest first); more
        than one batch run side by side, one per OpenVINO stream (a stream per core).

        embed_batch(["a", "b"]).shape -> (2, dim)"""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = self._encode_ids(texts)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        size = self._batch_size
        batches = [order[start : start + size] for start in range(0, len(order), size)]
        if len(batches) > 1:
            self._embed_streams(ids, batches, out)
            return out
        key = "single" if len(texts) <= SINGLE_THREAD_UP_TO else "latency"
        feeds, mask = self._feeds(ids, batches[0])
        hidden = self._compile(key).create_infer_request().infer(feeds)[0]
        out[batches[0]] = pool(np.asarray(hidden, dtype=np.float32), mask, self._cls)
        return out

    def _embed_streams(
        self, ids: list[list[int]], batches: list[list[int]], out: Vectors
    ) -> None:
        """Batches on the throughput-compiled model, as many at once as it has streams: on a
        busy machine a stream that loses its core holds up only its own batch, not a barrier
        of every core (wall time 0.4-0.9x of one batch on all cores, in bench runs at load 5-7).
        """
        import openvino

        compiled = self._compile("throughput")
        jobs = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        queue = openvino.AsyncInferQueue(compiled, max(1, jobs))
        failures: list[BaseException] = []

        def pooled(request: Any, job: tuple[list[int], np.ndarray[Any, Any]]) -> None:
            batch, mask = job
            try:
                hidden = np.asarray(request.get_output_tensor(0).data, dtype=np.float32)
                out[batch] = pool(hidden, mask, self._cls)
            except BaseException as exc:  # noqa: BLE001  raised below, in the caller's thread
                failures.append(exc)

        queue.set_callback(pooled)
        for batch in batches:
            feeds, mask = self._feeds(ids, batch)
            queue.start_async(feeds, (batch, mask))
        queue.wait_all()
        if failures:
            raise failures[0]

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes in the model, without the [CLS]/[SEP] pair."""
        if not texts:
            return []
        encoded = self._counter.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encoded]
