"""The matcher's last check: a question must say what the approved phrasing says in nearly its
words; misspellings (English letters, Chinese characters of the same sound) are forgiven, a
changed word or number is not."""

from __future__ import annotations

import pytest

from assistant.approved.wording import same_wording

CARRY = "How many days of annual leave can be carried over?"


@pytest.mark.parametrize("question", [
    CARRY,
    "how many days of annual leave can be carried over",  # case and punctuation
    "How many days of annual leave can I cary over?",  # "cary": a letter short of carry
    "How many days of anual leave can be caried over?",
])
def test_the_same_words_or_their_misspellings_match(question: str) -> None:
    assert same_wording(question, CARRY)


@pytest.mark.parametrize("question", [
    "How many days of annual leave do I get?",  # shares all but the word that matters
    "How many days of sick leave can be carried over?",
    "How many days of annual leave can part-time staff carry over?",  # says more
    "How many days of unpaid leave can be carried over?",
    "How many days of annual leave can be carried over in 2024?",  # a number it does not name
])
def test_a_changed_or_added_word_or_number_does_not(question: str) -> None:
    assert not same_wording(question, CARRY)


def test_misspellings_need_the_first_letter_and_four_letters() -> None:
    assert same_wording("Max parantal leave weeks?", "Max parental leave weeks?")  # 2 edits, 8
    assert same_wording("flihgts budjet?", "flights budget?")  # a swap; one substitution
    assert not same_wording("When are new hires paid?", "When are new fires paid?")
    assert not same_wording("paid medical leave", "unpaid medical leave")


def test_chinese_characters_of_the_same_sound_are_forgiven_others_not() -> None:
    assert same_wording("年修假有几天？", "年休假有几天？")  # xiu for xiu
    assert same_wording("公伤认定要多久？", "工伤认定要多久？")
    assert not same_wording("育儿假有几天？", "年休假有几天？")
    assert not same_wording("婚假工资怎么算？", "丧假工资怎么算？")
    assert not same_wording("试用期最长两年吗？", "劳动合同最长两年吗？")
    assert not same_wording("年休假有几天？", "How many days of annual leave?")  # other language


def test_a_possessive_with_or_without_its_apostrophe_matches() -> None:
    approved = "When do I need a doctor's note for sick leave?"
    assert same_wording("When do I need a doctors note for sick leave?", approved)
    assert same_wording("When do I need a doctor’s note for sick leave?", approved)
    assert not same_wording("When do I need a doctors note for annual leave?", approved)
