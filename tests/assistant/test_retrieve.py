"""Retrieval: which lexical candidates a named document lifts (pure), and the dense side run
beside BM25 (on fakes)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from assistant.lexical import TitleIndex
from assistant.retrieve import _by_amount, _by_title


def _snapshot() -> Any:
    docs = {"c1": "lab", "c2": "lcl", "c3": "lab", "c4": "dsl"}
    return SimpleNamespace(
        titles=TitleIndex(
            {
                "lab": "中华人民共和国劳动法",
                "lcl": "中华人民共和国劳动合同法",
                "dsl": "中华人民共和国数据安全法",
            }
        ),
        doc_ids=list(docs.values()),
        row_of={cid: i for i, cid in enumerate(docs)},
    )


def test_candidates_of_a_named_document_share_its_rank() -> None:
    lexical = [("c2", 9.0), ("c1", 8.0), ("c4", 7.0), ("c3", 6.0)]
    assert _by_title(_snapshot(), "劳动合同法规定的试用期多长？", lexical) == {"c2": 1}
    assert _by_title(_snapshot(), "劳动合同法和劳动法有什么不同？", lexical) == {
        "c2": 1,
        "c1": 2,
        "c3": 2,
    }


def test_no_named_document_no_ranking() -> None:
    assert _by_title(_snapshot(), "试用期最长多久？", [("c1", 1.0)]) == {}


def test_candidates_stating_the_asked_amount_keep_lexical_order() -> None:
    texts = {
        "c1": "第四十三条用人单位不得违反本法规定延长劳动者的工作时间。",
        "c2": "第三十八条用人单位应当保证劳动者每周至少休息一日。",
        "c3": "第四十条春节，放假4天。",
    }
    snap = SimpleNamespace(texts=list(texts.values()), row_of={c: i for i, c in enumerate(texts)})
    lexical = [("c1", 9.0), ("c3", 8.0), ("c2", 7.0)]
    assert _by_amount(snap, "公司每周至少要让员工休息几天？", lexical) == ["c3", "c2"]
    assert _by_amount(snap, "休息日可以安排加班吗？", lexical) == []


def test_the_dense_side_runs_beside_bm25_and_returns_what_it_would_alone(
    tmp_path: Path,
) -> None:
    """Issue 12: the question is embedded and searched on a worker thread while BM25 scores;
    its figures are those of the dense ranking computed on this thread."""

    import numpy as np

    from assistant.retrieve import Retriever
    from core.config import load_settings
    from core.types import Block, DocMeta, ParsedDoc
    from ingest.ledger import Ledger
    from ingest.pipeline import Writer
    from ingest.store import Store
    from tests.fakes import FakeEmbedder, MemoryVectorIndex

    class ThreadNoting(FakeEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.threads: list[str] = []

        def embed_batch(self, texts: Sequence[str]) -> Any:
            self.threads.append(threading.current_thread().name)
            return super().embed_batch(texts)

    repo = Path(__file__).resolve().parents[2]
    settings = load_settings(repo / "config.toml", environ={}).with_store(tmp_path / "store")
    embedder = ThreadNoting()
    store = Store(settings, Ledger(tmp_path / "ledger.sqlite"), MemoryVectorIndex(), embedder)
    texts = {
        "leave.pdf": ("Unused annual leave of up to five days carries over.", ("all",)),
        "travel.pdf": ("Travel expenses are reimbursed within thirty days.", ("all",)),
        "salary.pdf": ("Salary bands for grade seven and annual leave days.", ("hr",)),
    }
    for name, (text, groups) in texts.items():
        meta = DocMeta(id=name, path=name, root="/d", sha256=name, size=1, mtime=0.0, groups=groups)
        Writer(store, store.collection).write(meta, ParsedDoc([Block(text, ("P",), 1, 1)]))
    retriever = Retriever(settings, store)
    question = "How many days of annual leave carry over?"
    got = retriever.retrieve(question, ["all"])
    assert embedder.threads and all(t.startswith("dense") for t in embedder.threads[-1:])
    assert {"dense_embed", "dense_search"} <= set(got.timings_ms)
    # the same rankings computed one after the other, on this thread
    snap = retriever.snapshot()
    allowed = snap.allowed(["all"])
    vector = store.embed_question([question])[0]
    dense = retriever._dense(snap, vector, allowed, settings.retrieve.candidates)
    assert "salary.pdf" not in {p.file for p in got.passages}  # hr only
    assert dense and np.isclose(got.dense_top, dense[0][1])
    assert got.passages[0].file == "leave.pdf"
    store.close()
