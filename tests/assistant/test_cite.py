"""Citation parsing and verification."""

from __future__ import annotations

from assistant.cite import Marker, best_quote, lexical_support, parse_markers, verify
from core.types import Passage

LEAVE = Passage(
    "c1", "d1", "Leave.pdf",
    "Annual leave. Between 3 and 15 years: you earn 6 hours per pay period. "
    "You can carry over a maximum of 240 annual leave hours.",
    ("Leave",), 2, 2,
)  # fmt: skip
NIANJIA = Passage(
    "c2", "d2", "年休假办法.docx",
    "第三条 职工累计工作已满1年不满10年的，年休假5天；已满10年不满20年的，年休假10天。",
    ("第一章",),
)  # fmt: skip
LAW = Passage("c3", "d3", "劳动法.pdf", "禁止用人单位招用未满十六周岁的未成年人。", (), 2, 2)


def test_marker_forms() -> None:
    text = "a[1] b[1, 2] c[3][4] d【5】 e[6-8] f[2，3] g[x] h[12345]"
    assert [m.numbers for m in parse_markers(text)] == [
        (1,), (1, 2), (3,), (4,), (5,), (6, 7, 8), (2, 3),
    ]  # fmt: skip
    assert parse_markers("见[1]")[0] == Marker(1, 4, (1,))


def test_lexical_support_needs_the_numbers() -> None:
    share, numbers_ok = lexical_support("You can carry over 240 hours", LEAVE.text)
    assert share >= 0.5 and numbers_ok
    assert lexical_support("You can carry over 300 hours", LEAVE.text)[1] is False
    # Chinese numerals in the passage count as the Arabic numbers of the claim
    assert lexical_support("未满16周岁不得招用", LAW.text)[1] is True


def test_best_quote_is_the_supporting_sentence() -> None:
    assert best_quote("carry over 240 hours", LEAVE.text) == (
        "You can carry over a maximum of 240 annual leave hours."
    )


def test_supported_citations_resolve_to_file_page_section_quote() -> None:
    answer = "You can carry over up to 240 hours [1]. 满10年不满20年的年休假10天【2】。"
    out = verify(answer, [LEAVE, NIANJIA])
    assert not out.unverified
    assert out.text == "You can carry over up to 240 hours [1]. 满10年不满20年的年休假10天[2]。"
    c1, c2 = out.citations
    assert (c1.n, c1.file, c1.page, c1.section, c1.chunk_id) == (1, "Leave.pdf", 2, "Leave", "c1")
    assert "240" in c1.quote and c1.supported
    assert (c2.file, c2.page, c2.section, c2.supported) == ("年休假办法.docx", None, "第一章", True)


def test_unsupported_and_out_of_range_markers_are_removed() -> None:
    answer = "You earn 6 hours per pay period [1][3]. Sick leave is unlimited [1]. 年休假15天[2]。"
    out = verify(answer, [LEAVE, NIANJIA])
    assert out.text == "You earn 6 hours per pay period [1]. Sick leave is unlimited. 年休假15天。"
    assert [(c.n, c.supported) for c in out.citations] == [(1, True), (2, False)]
    assert not out.unverified


def test_marker_after_the_full_stop_cites_the_sentence_before() -> None:
    out = verify("You earn 6 hours per pay period. [1] Next claim.", [LEAVE])
    assert out.citations[0].supported and "6 hours" in out.citations[0].quote


def test_answer_without_supported_citation_is_unverified() -> None:
    assert verify("No citations at all.", [LEAVE]).unverified
    out = verify("Employees get free lunches [1].", [LEAVE])
    assert out.unverified and out.text == "Employees get free lunches."


def test_similarity_can_support_a_paraphrase() -> None:
    paraphrase = "Staff may roll 240 hours into next year [1]."
    assert verify(paraphrase, [LEAVE], min_support=0.9).unverified
    out = verify(paraphrase, [LEAVE], min_support=0.9, similarity=lambda a, b: 0.9)
    assert not out.unverified
    # similarity never overrides a number missing from the passage
    wrong = verify("Staff may roll 300 hours [1].", [LEAVE], similarity=lambda a, b: 1.0)
    assert wrong.unverified


def test_attribute_adds_markers_only_where_a_passage_supports() -> None:
    from assistant.cite import attribute

    leave = Passage("c1", "d1", "leave.pdf", "Employees may carry over at most 5 days of leave.")
    travel = Passage("c2", "d2", "travel.pdf", "Hotels in tier-1 cities are capped at 800 yuan.")
    answer = (
        "You may carry over at most 5 days of leave. The moon is made of cheese. "
        "Hotels cost 800 yuan [2]."
    )
    out = attribute(answer, [leave, travel])
    assert out == (
        "You may carry over at most 5 days of leave. [1] The moon is made of cheese. "
        "Hotels cost 800 yuan [2]."
    )
    # a number the passage does not state is not attributed
    assert attribute("You may carry over at most 9 days of leave.", [leave]) == (
        "You may carry over at most 9 days of leave."
    )
    assert attribute(
        "年假最多可以结转5天。", [Passage("c", "d", "f", "员工最多可以结转5天年假。")]
    ) == ("年假最多可以结转5天。[1]")
