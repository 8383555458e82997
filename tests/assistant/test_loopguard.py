"""The loop guard on scripted streams: it trips on repeated sentences and back-to-back runs,
trims the repetition, and leaves ordinary answers alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assistant.llm.loopguard import LoopGuard


def run(pieces: list[str]) -> tuple[LoopGuard, int]:
    guard = LoopGuard()
    for fed, piece in enumerate(pieces, 1):
        if guard.feed(piece):
            return guard, fed
    return guard, len(pieces)


def words(text: str) -> list[str]:
    return [w + " " for w in text.split(" ")]


def test_a_sentence_said_a_third_time_stops_the_answer() -> None:
    loop = "The answer is: 2.2 Mandatory training. " * 20
    guard, fed = run(words("Five days can be carried over [1]. " + loop))
    assert guard.tripped
    assert fed < len(words(loop)) // 2  # stopped early, not at the token limit
    assert guard.text == "Five days can be carried over [1]. The answer is: 2.2 Mandatory training."


def test_a_loop_without_sentence_ends_is_caught() -> None:
    guard, _ = run(list("年假可以结转" + "休假天数" * 10))
    assert guard.tripped and guard.text == "年假可以结转休假天数"
    guard, _ = run(words("Steps: " + "click save then " * 10))
    assert guard.tripped and guard.text == "Steps: click save then"


def test_a_run_of_one_character_is_caught() -> None:
    guard, fed = run(["Five days [1]."] + [" "] * 400)
    assert guard.tripped and fed < 40 and guard.text == "Five days [1]."
    guard, _ = run(["\ufffd"] * 100)
    assert guard.tripped and guard.text == "\ufffd\ufffd"  # one round of the run


def test_citations_do_not_hide_a_repeated_sentence() -> None:
    guard, _ = run(words("Leave is 5 days [1]. Leave is 5 days [2]. Leave is 5 days [1]. More."))
    assert guard.tripped and guard.text == "Leave is 5 days [1]."


def test_ordinary_answers_pass_untouched() -> None:
    answers = [
        "Employees may carry over up to five days [1]. Unused days beyond that lapse [2].",
        "1. Submit the form. 2. Attach receipts. 3. Wait for approval [3].",
        "一线城市住宿标准为每人每晚800元[1]。二线城市为600元[1]。其他城市为400元[2]。",
        "| 一线城市 | 800 |\n| 二线城市 | 600 |\n| 三线城市 | 400 |",
    ]
    for answer in answers:
        guard, _ = run(words(answer))
        assert not guard.tripped and guard.text == "".join(words(answer))


@given(st.lists(st.sampled_from(["leave", "days", "five", "travel", "rate", "per", "night"]),
                min_size=1, max_size=6))
def test_any_phrase_repeated_back_to_back_is_trimmed_to_one(phrase: list[str]) -> None:
    sentence = " ".join(phrase)
    guard, _ = run(words(("Intro text here. " + (sentence + " ") * 8).strip()))
    assert guard.tripped
    assert len(guard.text) <= len("Intro text here. ") + 2 * len(sentence) + 1
