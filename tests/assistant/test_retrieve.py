"""Retrieval: which lexical candidates a named document lifts (pure), and the dense side run
beside BM25 (on fakes)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from assistant.retrieve.lexical import TitleIndex
from assistant.retrieve.rankings import Query, by_amount, by_title


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


def _query(question: str) -> Query:
    """What the title and amount rankings read of a question: its text."""
    return Query(question, terms=[], allowed=np.ones(0, dtype=bool), candidates=0)


def test_candidates_of_a_named_document_share_its_rank() -> None:
    lexical = [("c2", 9.0), ("c1", 8.0), ("c4", 7.0), ("c3", 6.0)]
    assert by_title(_snapshot(), _query("劳动合同法规定的试用期多长？"), lexical) == {"c2": 1}
    assert by_title(_snapshot(), _query("劳动合同法和劳动法有什么不同？"), lexical) == {
        "c2": 1,
        "c1": 2,
        "c3": 2,
    }


def test_no_named_document_no_ranking() -> None:
    assert by_title(_snapshot(), _query("试用期最长多久？"), [("c1", 1.0)]) == {}


def test_candidates_stating_the_asked_amount_keep_lexical_order() -> None:
    texts = {
        "c1": "第四十三条用人单位不得违反本法规定延长劳动者的工作时间。",
        "c2": "第三十八条用人单位应当保证劳动者每周至少休息一日。",
        "c3": "第四十条春节，放假4天。",
    }
    snap = SimpleNamespace(texts=list(texts.values()), row_of={c: i for i, c in enumerate(texts)})
    lexical = [("c1", 9.0), ("c3", 8.0), ("c2", 7.0)]
    assert by_amount(snap, _query("公司每周至少要让员工休息几天？"), lexical) == ["c3", "c2"]
    assert by_amount(snap, _query("休息日可以安排加班吗？"), lexical) == []


def test_the_dense_side_runs_beside_bm25_and_returns_what_it_would_alone(
    tmp_path: Path,
) -> None:
    """Issue 12: the question is embedded and searched on a worker thread while BM25 scores;
    its figures are those of the dense ranking computed on this thread."""

    import numpy as np

    from assistant.retrieve.retriever import Retriever
    from core.config import load_settings
    from core.types import Block, DocMeta, ParsedDoc
    from ingest.pipeline import Writer
    from store.ledger import Ledger
    from store.store import Store
    from tests.support.fakes import FakeEmbedder, MemoryVectorIndex

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
    dense = retriever.dense.nearest(snap, vector, allowed, settings.retrieve.candidates)
    assert "salary.pdf" not in {p.file for p in got.passages}  # hr only
    assert dense and np.isclose(got.dense_top, dense[0][1])
    assert got.passages[0].file == "leave.pdf"
    store.close()


def _store_of_groups(tmp_path: Path, vectors: dict[str, Any]) -> Any:
    """A real ledger and an in-memory vector index: 20 documents of 10 chunks, the first two
    visible to "finance" only (10%), the rest to "all"; `vectors[doc]` gives each doc's."""
    from core.config import load_settings
    from core.types import Chunk, DocMeta
    from store.ledger import Ledger
    from store.store import Store
    from store.vectors import group_metadata
    from tests.support.fakes import FakeEmbedder, MemoryVectorIndex

    repo = Path(__file__).resolve().parents[2]
    settings = load_settings(repo / "config.toml", environ={}).with_store(tmp_path / "store")
    store = Store(settings, Ledger(tmp_path / "ledger.sqlite"), MemoryVectorIndex(), FakeEmbedder())
    for d in range(20):
        groups = ("finance",) if d < 2 else ("all",)
        meta = DocMeta(
            id=f"doc{d}",
            path=f"doc{d}.pdf",
            root="/d",
            sha256=str(d),
            size=1,
            mtime=0.0,
            groups=groups,
        )
        chunks = [Chunk(f"d{d}c{i}", meta.id, i, f"text {d} {i}", ("S",), 1, 1) for i in range(10)]
        store.ledger.replace_document(meta, chunks, [["text"]] * 10)
        store.vectors.upsert(
            store.collection,
            [c.id for c in chunks],
            vectors[f"doc{d}"],
            [group_metadata(meta.id, groups)] * 10,
        )
    return store


def _unit(rows: Any) -> Any:
    import numpy as np

    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _brute_force(store: Any, allowed_docs: set[str], vector: Any, n: int) -> list[str]:
    scored = [
        (cid, float(v @ vector))
        for cid, (v, meta) in store.vectors.data[store.collection].items()
        if meta["doc_id"] in allowed_docs
    ]
    return [cid for cid, _ in sorted(scored, key=lambda x: -x[1])[:n]]


def test_a_small_share_of_many_vectors_is_searched_in_chroma_then_masked(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Issue 12: a group that sees 10% of a corpus too large for the exact search
    (EXACT_UP_TO) gets Chroma's unfiltered nearest n * SURVIVE_MARGIN / share, masked; its
    visible vectors are never loaded. Only allowed chunks come back, the nearest first."""
    import numpy as np

    import assistant.retrieve.dense as dense
    from assistant.retrieve.retriever import Retriever

    rng = np.random.default_rng(1)
    question = _unit(rng.standard_normal((1, 16)))[0]
    # finance's chunks lie near the question, the others anywhere
    vectors = {f"doc{d}": _unit(rng.standard_normal((10, 16))) for d in range(20)}
    for d in (0, 1):
        vectors[f"doc{d}"] = _unit(question + 0.3 * rng.standard_normal((10, 16)))
    store = _store_of_groups(tmp_path, vectors)
    monkeypatch.setattr(dense, "EXACT_UP_TO", 5)
    monkeypatch.setattr(dense, "EXACT_STORE_UP_TO", 0)
    retriever = Retriever(store.settings, store)
    snap = retriever.snapshot()
    got = retriever.dense.nearest(snap, question, snap.allowed(["finance"]), 3)
    assert [c for c, _ in got] == _brute_force(store, {"doc0", "doc1"}, question, 3)
    assert snap._vectors == {}  # no exact search
    store.close()


def test_too_few_surviving_the_mask_falls_back_to_the_exact_search(
    tmp_path: Path, monkeypatch: Any
) -> None:
    import numpy as np

    import assistant.retrieve.dense as dense
    from assistant.retrieve.retriever import Retriever

    rng = np.random.default_rng(2)
    question = _unit(rng.standard_normal((1, 16)))[0]
    # everyone else's chunks lie nearer the question than any of finance's
    vectors = {f"doc{d}": _unit(question + 0.1 * rng.standard_normal((10, 16))) for d in range(20)}
    for d in (0, 1):
        vectors[f"doc{d}"] = _unit(-question + 0.5 * rng.standard_normal((10, 16)))
    store = _store_of_groups(tmp_path, vectors)
    monkeypatch.setattr(dense, "EXACT_UP_TO", 5)
    monkeypatch.setattr(dense, "EXACT_STORE_UP_TO", 0)
    retriever = Retriever(store.settings, store)
    snap = retriever.snapshot()
    got = retriever.dense.nearest(snap, question, snap.allowed(["finance"]), 3)
    assert [c for c, _ in got] == _brute_force(store, {"doc0", "doc1"}, question, 3)
    assert len(snap._vectors) == 1  # the exact search over finance's 20 vectors
    # all of "all" is 90%: Chroma's unfiltered answer, masked, as before
    got = retriever.dense.nearest(snap, question, snap.allowed(["all"]), 3)
    assert [c for c, _ in got] == _brute_force(
        store, {f"doc{d}" for d in range(2, 20)}, question, 3
    )
    store.close()


def test_a_small_store_is_searched_exactly_whatever_share_the_user_sees(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Issue 12: up to EXACT_STORE_UP_TO live chunks, a user who sees most of the store gets
    the exact search over their visible vectors too (faster than Chroma's query), never
    Chroma's approximate index; the same nearest chunks."""
    import numpy as np

    import assistant.retrieve.dense as dense
    from assistant.retrieve.retriever import Retriever

    rng = np.random.default_rng(3)
    question = _unit(rng.standard_normal((1, 16)))[0]
    vectors = {f"doc{d}": _unit(rng.standard_normal((10, 16))) for d in range(20)}
    store = _store_of_groups(tmp_path, vectors)
    asked: list[int] = []
    query = store.vectors.query
    monkeypatch.setattr(
        store.vectors, "query", lambda c, v, n, where=None: asked.append(n) or query(c, v, n, where)
    )
    retriever = Retriever(store.settings, store)
    snap = retriever.snapshot()
    got = retriever.dense.nearest(snap, question, snap.allowed(["all"]), 5)
    assert [c for c, _ in got] == _brute_force(
        store, {f"doc{d}" for d in range(2, 20)}, question, 5
    )
    assert asked == [] and len(snap._vectors) == 1
    monkeypatch.setattr(dense, "EXACT_STORE_UP_TO", 199)  # the store holds 200
    got = retriever.dense.nearest(snap, question, snap.allowed(["all"]), 5)
    assert asked == [20] and [c for c, _ in got] == _brute_force(
        store, {f"doc{d}" for d in range(2, 20)}, question, 5
    )
    store.close()


def test_a_small_store_holds_one_matrix_for_every_group_set(tmp_path: Path) -> None:
    """Up to EXACT_STORE_UP_TO live chunks, every row's vector is read once per snapshot and
    each asker's mask applied to the scores: users of different groups get their own exact
    nearest chunks from the one matrix, not a copy of their visible vectors each."""
    import numpy as np

    from assistant.retrieve.retriever import Retriever

    rng = np.random.default_rng(4)
    question = _unit(rng.standard_normal((1, 16)))[0]
    vectors = {f"doc{d}": _unit(rng.standard_normal((10, 16))) for d in range(20)}
    store = _store_of_groups(tmp_path, vectors)
    retriever = Retriever(store.settings, store)
    snap = retriever.snapshot()
    finance = retriever.dense.nearest(snap, question, snap.allowed(["finance"]), 25)
    everyone = retriever.dense.nearest(snap, question, snap.allowed(["all"]), 5)
    assert [c for c, _ in finance] == _brute_force(store, {"doc0", "doc1"}, question, 20)
    assert [c for c, _ in everyone] == _brute_force(
        store, {f"doc{d}" for d in range(2, 20)}, question, 5
    )
    assert len(snap._vectors) == 1
    store.close()


def test_the_lexical_candidates_are_counted_ahead_only_while_the_dense_side_runs() -> None:
    from concurrent.futures import Future

    from assistant.pack import render_passages
    from assistant.retrieve.dense import COUNT_AHEAD, DenseSearch
    from core.types import Passage

    rows = {f"c{i}": i for i in range(COUNT_AHEAD + 5)}
    snap: Any = SimpleNamespace(
        row_of=rows, passage=lambda row: Passage(f"c{row}", "d", "a.pdf", f"text {row}")
    )
    lexical = [(cid, 1.0) for cid in rows]
    counted: list[Sequence[str]] = []
    dense = DenseSearch(store=SimpleNamespace(), count_ahead=counted.append)  # nothing searched
    running: Future[Any] = Future()
    dense._count_ahead(running, snap, lexical)
    assert len(counted) == COUNT_AHEAD  # the best ones, each rendered first and later
    assert counted[0] == [render_passages([snap.passage(0), snap.passage(0)])]
    counted.clear()
    done: Future[Any] = Future()
    done.set_result(([], {}))
    dense._count_ahead(done, snap, lexical)
    assert counted == []  # the dense side finished first: nothing more to wait for


def test_counting_ahead_leaves_retrieval_and_packing_as_they_were(make_settings: Any) -> None:
    """Over the sample documents, with the test model's counter (built here when absent): the
    same passages, evidence and packed window with the lines counted ahead as without."""
    from assistant.llm.tokens import LocalTokenCounter
    from assistant.retrieve.retriever import Retriever
    from assistant.serving.testmodel import build_test_model
    from assistant.window import fill_window, snapshot_neighbours
    from devtools.vllm_server import MODEL_DIR
    from store.store import open_store
    from tests.support.stores import ingest_paths

    repo = Path(__file__).resolve().parents[2]
    model = build_test_model(MODEL_DIR)
    settings = make_settings()
    ingest_paths(settings, [repo / "data" / "samples" / "docs"])
    questions = ["How many days of annual leave can I carry over?", "差旅住宿标准是多少？",
                 "What is the password length?", "加班工资怎么算？"]
    store = open_store(settings)
    try:
        results = []
        for ahead in (False, True):
            counter = LocalTokenCounter(model, trust_remote_code=True)
            retriever = Retriever(settings, store, count_ahead=counter.prime if ahead else None)
            neighbours = snapshot_neighbours(retriever.snapshot())
            for q in questions:
                r = retriever.retrieve(q, ["all"])
                window = fill_window(r.passages, q, r.lang, counter.count, settings, neighbours)
                results.append((ahead, q, r.passages, r.evidence, window))
    finally:
        store.close()
    without = [x[1:] for x in results if not x[0]]
    with_ = [x[1:] for x in results if x[0]]
    assert with_ == without


def _prepared(retriever: Any, generation: int) -> Any:
    """The retriever's snapshot of `generation` once its refresher has prepared it."""
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if retriever.generation == generation:
            snap = retriever.snapshot()
            if snap.prepared.wait(0.05):
                return snap
        time.sleep(0.05)
    raise AssertionError(f"snapshot {generation} not prepared within 60 s")


def test_the_refresher_prepares_each_snapshot_it_builds(make_settings: Any) -> None:
    """A long-running retriever's refresher builds what a snapshot's first question would
    otherwise wait for (the dense side's matrix, the speller's words), for the snapshot it
    starts on and for the one it builds after another process ingests; what it then finds is
    what a retriever that prepared nothing finds."""
    from assistant.retrieve.retriever import Retriever
    from store.store import open_store
    from tests.support.stores import ingest_paths

    docs = Path(__file__).resolve().parents[2] / "data" / "samples" / "docs"
    settings = make_settings()
    ingest_paths(settings, [docs / "Employee-Leave-Policy.pdf"])
    store = open_store(settings)
    question = "加班工资怎么算？"
    try:
        retriever = Retriever(settings, store)
        stop = retriever.refresh_every(0.05)
        try:
            first = _prepared(retriever, store.ledger.generation())
            assert len(first._vectors) == 1 and first.speller._english is not None
            ingest_paths(settings, [docs / "考勤与加班管理办法.pdf"])  # another store, as a job
            second = _prepared(retriever, store.ledger.generation())
            assert second is not first
            assert len(second._vectors) == 1 and second.speller._chinese is not None
            found = retriever.retrieve(question, ["all"])
        finally:
            stop()
        fresh = Retriever(settings, store).retrieve(question, ["all"])
        assert [p.chunk_id for p in found.passages] == [p.chunk_id for p in fresh.passages]
        assert "考勤与加班管理办法.pdf" in {p.file for p in found.passages}
    finally:
        store.close()
