"""Retrieval-only answers quote what answers: the sentence or the table rows that hold the most
of the question, cited [n], before the passages (shown once, as sources)."""

from __future__ import annotations

from assistant.best_sentence import answering, best_quote, blocks, chosen, tidy
from assistant.exits import fallback, retrieval_only
from assistant.prompt import ACROSS_NOTICE, NOTHING_FOUND
from core.types import Passage

LEAVE = Passage(
    "c1", "d1", "Employee-Leave-Policy.pdf",
    "2.4 Carry-over of unused leave\nEmployees may carry over at most 5 days of unused annual "
    "leave into the next year. Carried-over days must be taken by 31 March; any still unused "
    "lapse without compensation.Managers may not approve more.",
    section=("2 Annual Leave", "2.4 Carry-over of unused leave"), page=2, score=3.0,
    title="Employee Leave Policy")
ENTITLEMENT = Passage(
    "c2", "d1", "Employee-Leave-Policy.pdf",
    "2.1 Entitlement\nFull-time employees receive 15 days of paid annual leave per calendar year.",
    section=("2 Annual Leave", "2.1 Entitlement"), page=2, score=2.0)
HOTEL = Passage(
    "c3", "d2", "差旅费管理办法-2024.pdf",
    "一、住宿标准\n住宿费按出差目的地城市级别实行限额标准，具体如下表：\n"
    "| 城市级别 | 城市范围 | 住宿标准（元/人·晚） |\n| 一线城市 | 北京、上海、广州、深圳 | 800 |\n"
    "| 新一线城市 | 杭州、成都、南京 | 550 |\n一线城市住宿标准为每晚不超过800元。",
    section=("第三章住宿费", "一、住宿标准"), page=3, score=5.0)


def test_the_answer_is_the_answering_sentence_cited_not_the_passages() -> None:
    answer = retrieval_only("How many days of unused annual leave can I carry over?", "en",
                            [ENTITLEMENT, LEAVE], "model down")
    assert answer.answer == ("Employees may carry over at most 5 days of unused annual leave "
                             "into the next year. [1]")
    assert [p.chunk_id for p in answer.passages] == ["c1", "c2"]  # best first, shown once
    assert answer.passages[0].text == LEAVE.text  # the passage as it is, for its card
    # each card marks what answers in it, not the whole passage
    assert answer.citations[0].quote.startswith("Employees may carry over at most 5 days")
    assert answer.citations[1].quote == ENTITLEMENT.text.split("\n")[1]
    assert not answer.unsure


def test_chinese_the_sentence_stating_the_amount_wins_over_one_sharing_sub_words() -> None:
    found = answering("去北京出差，住宿费每晚最多能报多少？", HOTEL.text, HOTEL.section)
    assert found.text == "一线城市住宿标准为每晚不超过800元。"


def test_table_rows_answer_under_their_header_as_a_table() -> None:
    found = answering("一线城市有哪些？", HOTEL.text, HOTEL.section)
    assert found.table and found.quote == "| 一线城市 | 北京、上海、广州、深圳 | 800 |"
    assert found.text.splitlines() == [
        "| 城市级别 | 城市范围 | 住宿标准（元/人·晚） |", "| --- | --- | --- |",
        "| 一线城市 | 北京、上海、广州、深圳 | 800 |", "| 新一线城市 | 杭州、成都、南京 | 550 |"]
    text = retrieval_only("一线城市有哪些？", "zh", [HOTEL], "down").answer
    assert text.startswith("据[1]：\n\n| 城市级别 |")


def test_headings_and_glued_sentences_are_read_apart() -> None:
    assert blocks(LEAVE.text, LEAVE.section)[0] == ("heading", ["2.4 Carry-over of unused leave"])
    assert "compensation. Managers" in tidy(LEAVE.text)
    assert answering("unrelated words", LEAVE.text, LEAVE.section).shared == 0
    # nothing shared: the first sentence, never the heading
    assert answering("zzz", LEAVE.text, LEAVE.section).text.startswith("Employees may")


def test_a_second_quote_only_from_another_passage_holding_as_much() -> None:
    from assistant.best_sentence import Found

    assert chosen([Found("a", "a", 1), Found("b", "b", 1)]) == [0]  # one term: one quote
    assert chosen([Found("a", "a", 2), Found("b", "b", 3), Found("c", "c", 3)]) == [1, 2]
    assert chosen([Found("a", "a", 0)]) == [0] and chosen([]) == []


def test_an_english_asker_over_a_chinese_source_is_told_so() -> None:
    text = retrieval_only("What is the hotel limit per night in Shanghai?", "en", [HOTEL],
                          "down").answer
    assert text.splitlines()[0] == ACROSS_NOTICE["en"]
    assert "The source is in Chinese" in text
    same = retrieval_only("How many days of unused annual leave can I carry over?", "en",
                          [LEAVE], "down").answer
    assert ACROSS_NOTICE["en"] not in same


def test_weak_evidence_quotes_nothing_and_names_the_closest_passages() -> None:
    for lang, question in (("en", "Can I bring my dog?"), ("zh", "公司有宿舍吗？")):
        answer = retrieval_only(question, lang, [LEAVE, HOTEL], "down", unsure=True)
        lines = answer.answer.splitlines()
        assert lines[0] == NOTHING_FOUND[lang] and answer.unsure
        assert lines[1].startswith("[1] 《") and len(lines) == 3
    assert NOTHING_FOUND["en"] == "I found nothing that answers this; the closest passages are:"


def test_a_fallback_says_why_then_quotes_what_answers() -> None:
    answer = fallback("How many days of unused annual leave can I carry over?", "en", [LEAVE],
                      "no citation", "raw text")
    first, second = answer.answer.splitlines()
    assert "could not be checked" in first and second.endswith("[1]")
    assert answer.raw_answer == "raw text"


def test_best_quote_is_the_sentence_a_search_result_cites() -> None:
    text = "Pay is monthly. Sick leave is 5 days a year. Ask HR."
    assert best_quote("How many days of sick leave?", text) == "Sick leave is 5 days a year."
    assert best_quote("病假几天？", "工资按月发放。病假为五天。") == "病假为五天。"
    assert best_quote("anything", "") == ""
