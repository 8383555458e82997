"""The dense ranking of Chinese questions follows the languages the embedder declares
(embed.languages), over the real sample store. No Chinese embedder ships offline, so the test
builds a tiny randomly initialised sentence-transformers BERT (with the bundled MiniLM
tokenizer): its vectors mean nothing, the wiring is what is checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assistant.retrieve.retriever import Retriever
from store.store import open_store
from tests.support.stores import ingest_paths
from tests.support.tiny_bert import tiny_bert

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"
QUESTION = "出差住宿标准是多少？"


@pytest.fixture(scope="module")
def tiny_embedder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertModel

    folder = tmp_path_factory.mktemp("tiny-embedder")
    bert = tiny_bert(BertModel, folder / "bert")
    transformer = Transformer(str(bert), max_seq_length=128)
    pooling = Pooling(transformer.get_embedding_dimension())
    model = SentenceTransformer(modules=[transformer, pooling, Normalize()], device="cpu")
    out = folder / "st"
    model.save(str(out))
    return out


@pytest.mark.slow  # builds and exports an embedder
def test_chinese_questions_get_dense_ranks_only_from_a_declared_chinese_embedder(
    make_settings, tmp_path: Path, tiny_embedder: Path
) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES, docs)
    bilingual = make_settings(embed={"model": str(tiny_embedder), "languages": ("en", "zh")})
    ingest_paths(bilingual, [docs])
    english_only = make_settings(embed={"model": str(tiny_embedder), "languages": ("en",)})
    store = open_store(bilingual)
    try:
        read = Retriever(bilingual, store).retrieve(QUESTION, ["all"], k=5)
        unread = Retriever(english_only, store).retrieve(QUESTION, ["all"], k=5)
        english = Retriever(english_only, store).retrieve("What is the hotel limit?", ["all"])
    finally:
        store.close()
    assert read.lang == "zh" and read.dense_top != 0.0  # the dense side ran for Chinese
    assert read.evidence["dense"] == read.dense_top
    assert unread.dense_top == 0.0  # not read: no dense ranking at all
    assert english.dense_top != 0.0
    # the dense ranks add to the fused scores
    assert [p.score for p in read.passages] != [p.score for p in unread.passages]
