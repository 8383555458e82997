"""Follow-up questions read with their history (issue 25): the rules of assistant/followup.py on
plain strings, the model rewrite on a fake generator, and the assistant over the sample store
(real Chroma, real files) searching for what the reading says."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.followup import (
    leans_on_history,
    read_followup,
    read_question,
    topic_words,
    usable_rewrite,
)
from core.errors import ConfigError, GenerationError
from core.types import Turn
from devtools.ports import free_port
from tests.support.fakes import FakeGenerator
from ui.cli import main
from ui.wiring import open_services

CARRY = "How many days of unused annual leave can I carry over into next year?"


@pytest.mark.parametrize(
    "question",
    [
        "And Technical Success?",
        "What about contractors?",
        "Does the company match it?",
        "What happens if I miss that window?",
        "Is the deposit covered too?",
        "Can I book a trip there?",
        "When is it due?",
        "Receipts?",
        "那法定节假日上班呢？",
        "五级的呢？",
        "对它不服的话可以怎么办？",
        "上面要写明哪些内容？",
        "这笔钱怎么报销？",
        "期间工资照发吗？",
    ],
)
def test_a_question_that_refers_back_or_names_no_topic_leans(question: str) -> None:
    assert leans_on_history(question)


@pytest.mark.parametrize(
    "question",
    [
        "How many hours a week can I work a side job before I need approval?",
        "Is it possible to work remotely from abroad?",
        "Is there a stipend for gym membership?",
        "How many days of annual leave can I take this year?",
        "Is it true that I must book flights two weeks ahead?",
        "劳动者离职时，单位应该什么时候结清工资？",
        "用人单位申报社保时瞒报工资总额，会怎么处罚？",
    ],
)
def test_a_question_that_names_its_topic_stands_alone(question: str) -> None:
    assert not leans_on_history(question)


def test_topic_words_drop_question_words_and_particles() -> None:
    assert topic_words("How often do Engineering teammates get a laptop refresh?") == (
        "Engineering teammates laptop refresh"
    )
    assert topic_words("工伤停工留薪期最长多久？") == "工伤停工留薪期最长"
    assert topic_words("职工累计工作满1年不满10年，年休假有几天？") == (
        "职工累计工作满1年不满10年 年休假"
    )


def test_a_follow_up_is_searched_with_the_earlier_topic() -> None:
    reading = read_followup("And Technical Success?", ["How often do Engineering teammates "
                                                       "get a laptop refresh?"])
    assert reading.leaned
    assert reading.text == "And Technical Success? (Engineering teammates laptop refresh)"


def test_a_chain_of_follow_ups_keeps_the_first_topic() -> None:
    earlier = ["How many weeks of paid medical leave can I take?",
               "Do I need a doctor's note for that?"]
    text = read_followup("And once those four weeks are used up?", earlier).text
    assert "medical leave" in text and "doctor's note" in text


def test_a_topic_switch_keeps_the_new_topic_alone() -> None:
    question = "How quickly is a departing teammate's access to production systems removed?"
    earlier = ["How many weeks of paid parental leave do I get?", "Can I extend it past 16 weeks?"]
    assert read_followup(question, earlier).text == question
    assert read_followup("员工给公司造成经济损失，每月最多能从工资里扣多少？",
                         ["申请住房公积金贷款要提供担保吗？"]).text.startswith("员工给公司")


def test_no_history_no_reading() -> None:
    assert read_followup("And Technical Success?", []).text == "And Technical Success?"
    assert not read_followup("And Technical Success?", []).leaned


def test_rules_off_and_model_readings() -> None:
    earlier = ["How often do Engineering teammates get a laptop refresh?"]
    generator = FakeGenerator()
    off = read_question("And Technical Success?", earlier, "off", generator)
    assert off.text == "And Technical Success?" and not off.leaned
    rules = read_question("And Technical Success?", earlier, "rules", generator)
    assert "laptop refresh" in rules.text and not generator.requests
    generator.enqueue("How often do Technical Success teammates get a laptop refresh?")
    model = read_question("And Technical Success?", earlier, "model", generator)
    assert model.text == "How often do Technical Success teammates get a laptop refresh?"
    sent = generator.requests[0]
    assert sent[0]["role"] == "system" and earlier[0] in sent[1]["content"]
    # a question that stands alone costs no round trip
    alone = read_question("What is the minimum password length?", earlier, "model", generator)
    assert alone.text == "What is the minimum password length?" and len(generator.requests) == 1


def test_a_failed_or_runaway_model_rewrite_keeps_the_rules_reading() -> None:
    earlier = ["How often do Engineering teammates get a laptop refresh?"]
    generator = FakeGenerator()
    generator.enqueue([GenerationError("server down")])
    failed = read_question("And Technical Success?", earlier, "model", generator)
    assert failed == read_followup("And Technical Success?", earlier)
    generator.enqueue("word " * 200)
    runaway = read_question("And Technical Success?", earlier, "model", generator)
    assert runaway == read_followup("And Technical Success?", earlier)
    # SmolLM2-135M's replies when asked: an answer, and the earlier question copied back
    for reply in ("Engineering teammates get a new laptop every 2.5 years.",
                  "- How often do Engineering teammates get a laptop refresh?"):
        generator.enqueue(reply)
        lost = read_question("And Technical Success?", earlier, "model", generator)
        assert lost == read_followup("And Technical Success?", earlier), reply


def test_usable_rewrite_takes_the_first_line_without_a_label() -> None:
    assert usable_rewrite('Question: "How long is it?"\nBecause...', "And?") == "How long is it?"
    assert usable_rewrite("问题：工伤停工留薪期期间工资照发吗？", "期间工资照发吗？") == (
        "工伤停工留薪期期间工资照发吗？"
    )
    assert usable_rewrite("  \n ", "And?") == ""


def test_a_rewrite_that_drops_or_adds_nothing_to_the_follow_up_is_not_used() -> None:
    assert usable_rewrite("The maximum hotel spend is $300.", "And for food each day?") == ""
    assert usable_rewrite("最后一个问题: 期间工资照发吗？", "期间工资照发吗？") == ""
    earlier = ["职工累计工作满1年不满10年，年休假有几天？"]
    assert usable_rewrite(earlier[0], "那满20年的呢？", earlier) == ""  # copied back


def no_model(settings):  # type: ignore[no-untyped-def]
    """`settings` with no model server: answers quote the passages (retrieval-only), which is
    what these tests check."""
    llm = dataclasses.replace(settings.llm, url=f"http://127.0.0.1:{free_port()}/v1",
                              connect_timeout_s=1.0, retries=0)
    return dataclasses.replace(settings, llm=llm)


def test_the_assistant_searches_a_follow_up_with_its_history(sample_settings) -> None:
    follow_up = "And what if I don't use them by then?"
    services = open_services(no_model(sample_settings))
    try:
        alone = services.assistant.ask(follow_up, ["all"])
        answer = services.assistant.ask(follow_up, ["all"], [Turn(CARRY, "At most 5 days.")])
        switch = services.assistant.ask(
            "What should I do if I lose my work laptop?", ["all"], [Turn(CARRY, "5 days.")]
        )
    finally:
        services.close()
    assert alone.searched_for == follow_up
    assert answer.searched_for.startswith(follow_up) and "annual leave" in answer.searched_for
    assert "read_followup" in answer.timings_ms
    assert answer.citations[0].file == "Employee-Leave-Policy.pdf"
    assert "carry over" in answer.citations[0].quote, answer.citations
    # the control: alone, the follow-up finds other documents
    assert all(c.file != "Employee-Leave-Policy.pdf" for c in alone.citations), alone.citations
    assert switch.searched_for == "What should I do if I lose my work laptop?"
    assert switch.citations[0].file == "IT-Security-Policy.docx"


def test_the_history_words_weigh_less_than_the_follow_up_s_own(sample_settings) -> None:
    """"那伙食补助呢？" after a question on hotel costs: the meal allowance comes first, not the
    hotel limits, which hold more of the history's words; at full weight they win."""
    reading = read_followup("那伙食补助呢？", ["去北京出差，住宿费每晚最多能报多少？"])
    assert reading.context
    firsts = {}
    for weight in (0.5, 1.0):
        retrieve = dataclasses.replace(sample_settings.retrieve, history_weight=weight)
        services = open_services(dataclasses.replace(sample_settings, retrieve=retrieve))
        try:
            found = services.assistant.retriever.retrieve(
                reading.question, ["all"], context=reading.context
            )
        finally:
            services.close()
        firsts[weight] = found.passages[0].text
    assert firsts[0.5].startswith("一、伙食补助"), firsts
    assert firsts[1.0].startswith("一、住宿标准"), firsts


def test_kb_retrieve_reads_items_with_history(sample_settings, tmp_path: Path) -> None:
    questions = tmp_path / "followups.jsonl"
    items = [
        {"id": "f1", "question": "And what if I don't use them by then?",
         "history": [{"question": CARRY, "answer": "At most 5 days."}]},
        {"id": "f2", "question": "And what if I don't use them by then?"},
    ]
    questions.write_text("\n".join(json.dumps(i) for i in items), "utf-8")
    store = str(sample_settings.store_path())
    result = CliRunner().invoke(
        main, ["retrieve", "--questions", str(questions), "--json", "--store", store],
        env={"KB_EMBED_CACHE": sample_settings.embed.cache},
    )
    assert result.exit_code == 0, result.output
    f1, f2 = (json.loads(line) for line in result.output.splitlines())
    assert "annual leave" in f1["searched_for"] and f2["searched_for"] == items[1]["question"]
    # the window holds the small sample store's every section: its best passage tells
    best = [max(line["passages"], key=lambda p: p["score"])["text"] for line in (f1, f2)]
    assert "carry over at most 5 days" in best[0] and "carry over" not in best[1], best


def test_an_unknown_rewrite_is_a_config_error(sample_settings) -> None:
    settings = dataclasses.replace(
        sample_settings, answer=dataclasses.replace(sample_settings.answer, rewrite="llm")
    )
    with pytest.raises(ConfigError, match=r"answer.rewrite = 'llm': use one of rules, model"):
        open_services(settings)
