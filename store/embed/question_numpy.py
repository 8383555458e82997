"""Questions embedded without torch: the embedder's own BERT weights run in numpy.

A question-only process (`kb ask`, the app's first question) would otherwise import torch,
transformers and sentence-transformers (seconds on 2 cores) to embed one short text. For the
common case, a sentence-transformers folder holding a BERT encoder (`model.safetensors`,
`tokenizer.json`) with mean or [CLS] pooling, this module reads the same weights with
`safetensors` and tokenizes with `tokenizers` (both small native libraries), and runs the
forward pass in float32 numpy: the vectors agree with sentence-transformers' to ~1e-6
(tests/store/test_question_numpy.py). Any other model returns None from `open_question_encoder`,
and the store embeds questions with the passage embedder as before.

    encoder = open_question_encoder(settings.embed)
    encoder.embed_batch(["How many days of leave?"]).shape -> (1, 384)
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from core.config import EmbedSettings
from core.ports import Embedder, Vectors

logger = logging.getLogger(__name__)

Array = npt.NDArray[np.float32]


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return np.asarray(((x - mean) / np.sqrt(var + eps)) * weight + bias, dtype=np.float32)


def _erf(x: Array) -> Array:
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26; 5e-7 computed in float32), finer
    than the float32 activations it is applied to; scipy.special would cost a second to import.

    _erf(np.array([0.0, 1.0])) -> array([0., 0.8427...])
    """
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    return np.asarray(sign * (1.0 - poly * np.exp(-a * a)), dtype=np.float32)


def _gelu(x: Array) -> Array:
    """BERT's exact GELU, x * Phi(x)."""
    return (0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))).astype(np.float32)


def bert_layers(w: Mapping[str, Array], x: Array, heads: int, layers: int, eps: float) -> Array:
    """BERT's embedding LayerNorm and its `layers` encoder layers over one text's summed
    embeddings `x` ([tokens, hidden]); `w` by the names of a Hugging Face BERT's weights, each
    linear weight (in, out)."""
    n, hidden = x.shape
    d = hidden // heads
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    for i in range(layers):
        p = f"encoder.layer.{i}."

        def linear(x: Array, name: str, p: str = p) -> Array:
            return x @ w[p + name + ".weight"] + w[p + name + ".bias"]

        q = linear(x, "attention.self.query").reshape(n, heads, d).transpose(1, 0, 2)
        k = linear(x, "attention.self.key").reshape(n, heads, d).transpose(1, 2, 0)
        v = linear(x, "attention.self.value").reshape(n, heads, d).transpose(1, 0, 2)
        scores = (q @ k) / math.sqrt(d)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, hidden)
        x = _layer_norm(linear(context, "attention.output.dense") + x,
                        w[p + "attention.output.LayerNorm.weight"],
                        w[p + "attention.output.LayerNorm.bias"], eps)
        inner = _gelu(linear(x, "intermediate.dense"))
        x = _layer_norm(linear(inner, "output.dense") + x, w[p + "output.LayerNorm.weight"],
                        w[p + "output.LayerNorm.bias"], eps)
    return x


_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64}


def map_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """The tensors of a safetensors file as read-only views of the file mapped in memory: a cold
    process reads only the pages it touches (of the word embeddings, the question's rows), not
    the whole file (~90 MB for MiniLM: a third of a second of `kb ask` on a busy machine).
    Files with another dtype are read whole by `safetensors`.

    map_safetensors(folder / "model.safetensors")["embeddings.word_embeddings.weight"].shape
        -> (30522, 384)
    """
    with path.open("rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    header.pop("__metadata__", None)
    if any(t["dtype"] not in _DTYPES for t in header.values()):
        from safetensors.numpy import load_file

        return dict(load_file(str(path)))
    data = np.memmap(path, dtype=np.uint8, mode="r")
    start = 8 + size
    out: dict[str, npt.NDArray[Any]] = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        dtype = np.dtype(_DTYPES[t["dtype"]]).newbyteorder("<")
        flat = np.frombuffer(data, dtype=dtype, count=(end - begin) // dtype.itemsize,
                             offset=start + begin)
        out[name] = flat.reshape(t["shape"])
    return out


class NumpyBertEncoder:
    """A sentence-transformers BERT model (Transformer -> Pooling [-> Normalize]) in numpy."""

    def __init__(self, folder: Path, name: str) -> None:
        from threadpoolctl import ThreadpoolController
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text("utf-8"))
        st_config = _read_json(folder / "sentence_bert_config.json")
        pooling = _read_json(_pooling_folder(folder) / "config.json")
        self.name = name
        self.dim = int(config["hidden_size"])
        self.max_tokens = int(st_config.get("max_seq_length") or config["max_position_embeddings"])
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._cls = bool(pooling.get("pooling_mode_cls_token"))
        self._folder = folder
        self._counting: Any = None
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.no_padding()
        w = map_safetensors(folder / "model.safetensors")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
        # Linear weights stay (out, in) and are used transposed: BLAS reads them as they are.
        self._w: dict[str, Array] = {
            k.removeprefix(prefix): (v.T if k.endswith("dense.weight") or _is_qkv(k) else v)
            .astype(np.float32, copy=False)
            for k, v in w.items()
            if not k.endswith("position_ids")
        }
        self._layers = int(config["num_hidden_layers"])
        self._threads = ThreadpoolController()

    def _forward(self, ids: list[int], types: list[int]) -> Array:
        w, n = self._w, len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        x = bert_layers(w, x, self._heads, self._layers, self._eps)
        pooled = x[0] if self._cls else x.mean(axis=0)
        return np.asarray(pooled, dtype=np.float32)

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # One BLAS thread: a short text's matrices are small, and on a busy 2-core machine
        # waiting for a second thread cost 10x (0.27 s instead of ~0.03 s at load 16).
        with self._threads.limit(limits=1, user_api="blas"):
            for i, encoding in enumerate(self._tokenizer.encode_batch(list(texts))):
                out[i] = self._forward(encoding.ids, encoding.type_ids)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.asarray(out / np.maximum(norms, 1e-12), dtype=np.float32)

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes in the model, without the [CLS]/[SEP] pair."""
        if self._counting is None:  # the same tokenizer, not truncated
            from tokenizers import Tokenizer

            self._counting = Tokenizer.from_file(str(self._folder / "tokenizer.json"))
            self._counting.no_truncation()
            self._counting.no_padding()
        encoded = self._counting.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encoded]


def _is_qkv(key: str) -> bool:
    return key.endswith(("query.weight", "key.weight", "value.weight"))


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text("utf-8"))
    return data if isinstance(data, dict) else {}


def _pooling_folder(folder: Path) -> Path:
    for module in _modules(folder):
        if module.get("type", "").endswith("Pooling"):
            return folder / str(module.get("path", ""))
    return folder / "1_Pooling"


def _modules(folder: Path) -> list[dict[str, Any]]:
    path = folder / "modules.json"
    if not path.is_file():
        return []
    data = json.loads(path.read_text("utf-8"))
    return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []


def supported(folder: Path) -> bool:
    """Whether `folder` is a sentence-transformers BERT model this module runs exactly: a BERT
    config, safetensors weights, a fast tokenizer, and Transformer -> mean or [CLS] pooling
    (-> Normalize) and nothing else."""
    if not all((folder / f).is_file() for f in
               ("config.json", "model.safetensors", "tokenizer.json", "modules.json")):
        return False
    config = _read_json(folder / "config.json")
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        return False
    if config.get("position_embedding_type", "absolute") != "absolute":
        return False
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in _modules(folder)]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return False
    pooling = _read_json(_pooling_folder(folder) / "config.json")
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    return modes in ({"pooling_mode_mean_tokens"}, {"pooling_mode_cls_token"})


def open_question_encoder(settings: EmbedSettings) -> Embedder | None:
    """The numpy encoder of the configured embedder, or None when its folder is not local or
    not a model `supported` runs (the caller then uses the passage embedder); for
    multilingual-e5-small its question side, which reads a "query: " prefix."""
    from store.embed.embedder import E5_NAME, e5_side, resolve_model_path

    if settings.model == E5_NAME:
        return e5_side(settings, questions=True)

    try:
        folder = Path(resolve_model_path(settings.model)).expanduser()
    except Exception:  # a missing bundled package: the passage embedder reports it
        return None
    if not folder.is_dir() or not supported(folder):
        return None
    encoder = NumpyBertEncoder(folder, settings.model)
    logger.info("question encoder: %s in numpy (dim %d)", settings.model, encoder.dim)
    return encoder
