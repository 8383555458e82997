"""The served model's translation of a question (retrieve.translate = "model"): asked only where
the store holds the other language, searched for beside the question, dropped when unusable
(pure logic, on the fake generator)."""

from __future__ import annotations

from assistant.followup import Reading
from assistant.retrieve.crosslang.translate import translated, usable_translation
from core.errors import GenerationError
from tests.support.fakes import FakeGenerator

BOTH = {"en", "zh"}


def test_a_translation_is_searched_for_beside_the_question() -> None:
    generator = FakeGenerator()
    generator.enqueue("年假有多少天？")
    reading = translated(Reading("How many days of annual leave?"), "model", generator, BOTH)
    assert reading == Reading("How many days of annual leave?", context="年假有多少天？")
    assert "简体中文" in generator.requests[0][0]["content"]  # asked into Chinese


def test_a_followups_history_words_are_kept_beside_the_translation() -> None:
    generator = FakeGenerator()
    generator.enqueue("Sourcegraph 的酒店上限")
    reading = translated(Reading("And the hotel?", context="travel per diem"), "model",
                         generator, BOTH)
    assert reading.context == "travel per diem Sourcegraph 的酒店上限"


def test_no_model_is_asked_when_off_or_when_the_store_holds_one_language() -> None:
    generator = FakeGenerator()  # nothing queued: a request would raise
    question = Reading("年假有几天？")
    assert translated(question, "off", generator, BOTH) == question
    assert translated(question, "model", generator, {"zh"}) == question
    assert generator.requests == []


def test_a_failed_or_unusable_translation_leaves_the_reading_as_it_was() -> None:
    generator = FakeGenerator()
    generator.enqueue([GenerationError("server down")])
    generator.enqueue("年假有几天？")  # still Chinese: not a translation
    question = Reading("年假有几天？")
    assert translated(question, "model", generator, BOTH) == question
    assert translated(question, "model", generator, BOTH) == question


def test_usable_translation_cleans_one_line_and_refuses_an_answer() -> None:
    assert usable_translation('"How many days of annual leave?"\nextra', "年假有几天？") == (
        "How many days of annual leave?")
    assert usable_translation("x " * 200, "年假有几天？") == ""
    assert usable_translation("", "年假有几天？") == ""
