"""Retrieval-only quotes lead with the passage's best sentence for the question."""

from __future__ import annotations

from assistant.best_sentence import GAP, best_quote, best_sentence, lead_with_best


def test_the_answering_sentence_comes_first_and_nothing_is_lost() -> None:
    text = "Leave is paid. Parental leave lasts 12 weeks. Ask HR."
    led = lead_with_best("How many weeks of parental leave?", text)
    assert led == "Parental leave lasts 12 weeks." + GAP + "Leave is paid. Ask HR."


def test_chinese_and_unchanged_cases() -> None:
    text = "职工请假应提前申请。职工累计工作已满1年不满10年的，年休假5天。详见附件。"
    assert lead_with_best("年休假几天？", text).startswith("职工累计工作已满1年不满10年的")
    first = "年休假5天。其他。"
    assert lead_with_best("年休假几天？", first) == first  # already first
    assert lead_with_best("量子力学", "甲。乙。") == "甲。乙。"  # nothing shared: as it was
    assert best_sentence("sick leave?", []) == 0


def test_best_quote_is_the_sentence_a_search_result_cites() -> None:
    text = "Pay is monthly. Sick leave is 5 days a year. Ask HR."
    assert best_quote("How many days of sick leave?", text) == "Sick leave is 5 days a year."
    assert best_quote("病假几天？", "工资按月发放。病假为五天。") == "病假为五天。"
    assert best_quote("anything", "") == ""
