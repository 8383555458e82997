"""Score fusion of the BM25 and dense candidates (retrieve.fusion = "score"): the pure step
over a real BM25 index, then the wiring over the real sample store and the bundled embedder."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from assistant.retrieve.fuse import score_fuse
from assistant.retrieve.lexical import BM25Index, tokenize_query
from assistant.retrieve.rankings import score_fused
from assistant.retrieve.retriever import Retriever
from core.errors import ConfigError
from core.text import tokenize
from store.store import open_store
from tests.support.stores import ingest_paths

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"
TEXTS = {
    "c1": "Annual leave: employees may carry over at most 5 days of unused annual leave.",
    "c2": "Sick leave is paid at full salary for up to 10 days a year.",
    "c3": "Travel: the hotel limit is 150 dollars a night.",
}


def test_dense_only_candidates_get_their_bm25_score_looked_up() -> None:
    index = BM25Index.build((cid, tokenize(t)) for cid, t in TEXTS.items())
    snap = SimpleNamespace(bm25=index, row_of={cid: i for i, cid in enumerate(TEXTS)})
    terms = tokenize_query("How much annual leave can I carry over?")
    lexical = [("c1", float(index.scores(terms)[0]))]  # the lexical side kept only c1
    dense = [("c2", 0.62), ("c1", 0.60), ("c3", 0.10)]
    weights = {"lexical": 1.0, "dense": 1.0}
    looked_up = {c: float(s) for c, s in zip(TEXTS, index.scores(terms), strict=True)}
    assert score_fused(snap, terms, lexical, dense, weights) == score_fuse(
        {"lexical": looked_up, "dense": dict(dense)}, weights
    )
    assert score_fused(snap, terms, lexical, dense, weights)[0] == "c1"


def test_score_fusion_reorders_english_and_leaves_chinese_alone(
    make_settings, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES, docs)
    settings = make_settings()
    assert settings.retrieve.fusion == "score"  # the shipped default
    ingest_paths(settings, [docs])
    ranks = dataclasses.replace(settings.retrieve, fusion="rrf")
    store = open_store(settings)
    try:
        scored = Retriever(settings, store)
        ranked = Retriever(dataclasses.replace(settings, retrieve=ranks), store)
        questions = [
            "How many days of unused annual leave can I carry over into next year?",
            "What is the hotel limit when I travel?",
            "Can I work from home?",
        ]
        english = [(scored.retrieve(q, ["all"]), ranked.retrieve(q, ["all"])) for q in questions]
        chinese = [
            (scored.retrieve(q, ["all"]), ranked.retrieve(q, ["all"]))
            for q in ("出差住宿标准是多少？", "加班费怎么算？")
        ]
    finally:
        store.close()
    for a, b in chinese:  # no dense ranks for Chinese with this embedder: the same ranking
        assert [p.chunk_id for p in a.passages] == [p.chunk_id for p in b.passages]
    # English: the same candidates, in another order for at least one question
    assert any(
        [p.chunk_id for p in a.passages] != [p.chunk_id for p in b.passages] for a, b in english
    )
    for a, b in english:
        assert a.dense_top == b.dense_top and a.lexical_top == b.lexical_top


def test_an_unknown_fusion_is_refused_by_name(make_settings) -> None:
    settings = make_settings()
    bad = dataclasses.replace(settings, retrieve=dataclasses.replace(settings.retrieve, fusion="x"))
    with pytest.raises(ConfigError, match="retrieve.fusion"):
        Retriever(bad, SimpleNamespace())  # type: ignore[arg-type]
