"""The optional cross-encoder reranker, wired into retrieval over the real sample store. No
cross-encoder ships offline, so the test builds a tiny randomly initialised one (BERT with the
bundled MiniLM tokenizer): its scores mean nothing, the wiring is what is checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assistant.retrieve.retriever import Retriever
from core.errors import ConfigError
from tests.support.stores import ingest_paths
from tests.support.tiny_bert import tiny_bert
from ui.wiring import open_services

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"
QUESTION = "How many days of unused annual leave can be carried over?"


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import BertForSequenceClassification

    folder = tmp_path_factory.mktemp("cross-encoder")
    return tiny_bert(BertForSequenceClassification, folder, num_labels=1)


def test_reranker_orders_the_fused_candidates(
    make_settings, tmp_path: Path, tiny_cross_encoder: Path
) -> None:
    from sentence_transformers import CrossEncoder

    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES, docs)
    plain = make_settings()
    ingest_paths(plain, [docs])
    reranked = make_settings(retrieve={"reranker": str(tiny_cross_encoder)})
    services = open_services(reranked)
    try:
        fused = Retriever(plain, services.store).retrieve(QUESTION, ["all"], k=5).passages
        retrieval = services.assistant.retriever.retrieve(QUESTION, ["all"], k=5)
    finally:
        services.close()
    passages = retrieval.passages
    expected = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict(
        [(QUESTION, p.text) for p in passages]
    )
    assert [p.score for p in passages] == pytest.approx([float(s) for s in expected], abs=1e-5)
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)
    assert all(0 < p.score < 1 for p in passages)  # sigmoid scores, not RRF's ~0.03
    assert all(p.score < 0.1 for p in fused)
    assert "rerank" in retrieval.timings_ms


def test_a_reranker_that_cannot_be_loaded_is_named(make_settings) -> None:
    settings = make_settings(retrieve={"reranker": "no-such-org/no-such-cross-encoder"})
    with pytest.raises(ConfigError, match="retrieve.reranker 'no-such-org/"):
        open_services(settings)
