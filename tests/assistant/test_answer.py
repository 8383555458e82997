"""The query pipeline end to end: the sample store (real Chroma, real files), the real vLLM CPU
server with the tiny random ERNIE (it talks nonsense: these tests check protocol, budget,
streaming and records, not content), and the fallbacks."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.answer import should_abstain
from assistant.answer_json import answer_to_json
from assistant.llm.loopguard import LoopGuard
from assistant.prompt import LOOPED
from core.types import Answer, Turn
from devtools.ports import free_port
from ui.cli import main
from ui.wiring import open_services

REPO = Path(__file__).resolve().parents[2]


def with_llm(settings, llm):  # type: ignore[no-untyped-def]
    return dataclasses.replace(settings, llm=llm, base_dir=REPO)


@pytest.mark.vllm
def test_streamed_answer_against_the_real_server(sample_settings, vllm_server) -> None:
    settings = with_llm(sample_settings, vllm_server.llm)
    services = open_services(settings)
    assistant = services.assistant
    try:
        items = list(
            assistant.ask_stream(
                "How many days of unused annual leave can be carried over?", ["all"]
            )
        )
        pieces = [i for i in items if isinstance(i, str)]
        answer = items[-1]
        # the random model's nonsense verifies nothing: its text gives way to the passages
        assert isinstance(answer, Answer) and answer.mode == "fallback", answer.notice
        assert pieces[-1] == "\n\n" + answer.answer
        pieces = pieces[:-1]
        assert len(pieces) > 1  # streamed, not one block
        assert "".join(pieces).startswith(answer.raw_answer)
        # the passages quoted best first (the prompt showed them in document order)
        assert answer.citations and answer.citations[0].file == "Employee-Leave-Policy.pdf"
        assert "Employee-Leave-Policy.pdf" in {p.file for p in answer.passages}
        assert set(answer.timings_ms) >= {"retrieve", "pack", "first_token", "total"}
        assert answer.question_id > 0
        row = assistant.store.ledger.db.execute(
            "SELECT question, mode FROM questions WHERE id = ?", (answer.question_id,)
        ).fetchone()
        assert tuple(row) == (
            "How many days of unused annual leave can be carried over?",
            "fallback",
        )
        # a long conversation still fits: the oldest turns give way, vLLM never refuses the prompt
        history = [Turn("What is the policy? " * 150, "It says many things. " * 150)] * 6
        followup = assistant.ask("And the sick leave?", ["all"], history=history)
        assert followup.mode == "fallback", followup.notice  # answered, not refused for length
    finally:
        services.close()


@pytest.mark.vllm
def test_kb_ask_json_shape(sample_settings, vllm_server) -> None:
    env = vllm_server.cli_env(sample_settings.embed.cache)
    result = CliRunner().invoke(
        main,
        ["ask", "出差住宿标准是多少？", "--json", "--store", str(sample_settings.store_path())],
        env=env,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output.strip().splitlines()[-1])
    assert set(data) >= {"answer", "abstained", "citations", "passages", "timings_ms"}
    assert data["abstained"] is False and data["mode"] == "fallback"
    assert isinstance(data["model_answer"], str)
    assert data["citations"][0]["file"].startswith("差旅费管理办法-2024")
    assert set(data["timings_ms"]) >= {"retrieve", "pack", "first_token", "total"}


def test_retrieval_only_when_the_model_server_is_down(sample_settings) -> None:
    llm = dataclasses.replace(
        sample_settings.llm,
        url=f"http://127.0.0.1:{free_port()}/v1",
        model="baidu/ERNIE-4.5-0.3B-PT",
        connect_timeout_s=1.0,
        retries=0,
    )
    services = open_services(with_llm(sample_settings, llm))
    assistant = services.assistant
    try:
        answer = assistant.ask("How many days of paid sick leave do employees get?", ["all"])
        dorm = assistant.ask("公司有宿舍吗？", ["all"])
        gaps = [r for r in services.store.ledger.question_records() if r.unsure]
    finally:
        services.close()
    assert answer.mode == "retrieval_only" and not answer.unsure
    # the answer first: the sentence that answers, cited; the passages are its sources, once
    assert answer.answer == ("Employees receive 10 days of paid sick leave per calendar year "
                             "at full pay. [1]")
    assert answer.citations and answer.citations[0].file == "Employee-Leave-Policy.pdf"
    assert answer.citations[0].quote == answer.answer.removesuffix(" [1]")
    # weak evidence: nothing quoted as an answer, the closest passages named, a knowledge gap
    assert dorm.unsure and dorm.answer.startswith("没有找到能回答这个问题的内容；")
    assert [r.question for r in gaps] == ["公司有宿舍吗？"]
    assert answer_to_json(answer)["citations"][0]["page"] is not None


def test_questions_are_not_written_to_the_embedding_cache(sample_settings) -> None:
    def cached() -> int:
        with closing(sqlite3.connect(sample_settings.embed.cache)) as db:
            return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])

    before = cached()
    services = open_services(sample_settings)
    assistant = services.assistant
    try:
        retrieval = assistant.retriever.retrieve(
            "Which sick leave rule did nobody ask before?", ["all"]
        )
    finally:
        services.close()
    assert retrieval.dense_top > 0  # the question was embedded...
    assert cached() == before  # ...and not kept


def test_abstains_when_the_documents_do_not_cover_it(sample_settings) -> None:
    services = open_services(sample_settings)
    assistant = services.assistant
    try:
        answer = assistant.ask("量子色动力学中的渐近自由是什么意思？", ["all"])
        assert answer.abstained and answer.mode == "abstained"
        assert "没有找到" in answer.answer
        covered = assistant.retriever.retrieve("一线城市住宿标准是多少？", ["all"])
        assert not should_abstain(covered, sample_settings)
    finally:
        services.close()


def test_access_control_on_answers_and_sources(sample_settings) -> None:
    services = open_services(sample_settings)
    assistant = services.assistant
    try:
        hr_passages = assistant.retrieve("薪酬等级 工资范围 薪资带宽", ["hr"])
        hr_chunk = next(p for p in hr_passages if p.file.startswith("hr-only/"))
        for groups in (["all"], ["finance"], []):
            seen = assistant.retrieve("薪酬等级 工资范围 薪资带宽", groups)
            assert not any(p.file.startswith("hr-only/") for p in seen)
            with pytest.raises(Exception, match="not visible"):
                assistant.source(hr_chunk.chunk_id, groups)
            with pytest.raises(Exception, match="not visible"):
                assistant.document_path(hr_chunk.doc_id, groups)
        assert assistant.source(hr_chunk.chunk_id, ["hr"]).text == hr_chunk.text
    finally:
        services.close()


@pytest.mark.vllm
def test_the_loop_guard_stops_the_real_server(sample_settings, vllm_server) -> None:
    """Greedy decoding of the tiny random model falls into a cycle: the guard must cut the
    request off long before the token limit and keep one round of the loop."""
    llm = dataclasses.replace(vllm_server.llm, answer_tokens=400, temperature=0.0,
                              frequency_penalty=0.0, repetition_penalty=1.0)  # the guard alone
    services = open_services(with_llm(sample_settings, llm))
    try:
        question = "How many days of unused annual leave can be carried over?"
        items = list(services.assistant.ask_stream(question, ["all"]))
    finally:
        services.close()
    answer, streamed = items[-1], items[:-2]
    assert isinstance(answer, Answer) and answer.mode == "fallback"
    assert answer.notice == LOOPED["en"]
    assert len(streamed) < 300  # pieces received before the request was cancelled
    guard = LoopGuard()
    assert not guard.feed(answer.raw_answer)  # what is kept no longer loops
