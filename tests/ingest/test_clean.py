from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ingest.parse.clean import (
    clean_text,
    display_width,
    join_lines,
    remove_cjk_spaces,
    running_key,
    starts_item,
    strip_running_lines,
    typical_width,
    word_vocabulary,
)


def _nonspace(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_remove_cjk_spaces() -> None:
    assert remove_cjk_spaces("请 假 制 度") == "请假制度"
    assert remove_cjk_spaces("（2018 年修正）") == "（2018年修正）"
    assert remove_cjk_spaces("提前 3 个工作日") == "提前3个工作日"
    assert remove_cjk_spaces("use HR Links 系统") == "use HR Links 系统"
    assert remove_cjk_spaces("6 hours per pay period") == "6 hours per pay period"


@given(st.text(alphabet=st.sampled_from(list("请假 ab1 \t，。（）2"))))
def test_remove_cjk_spaces_only_removes_whitespace(text: str) -> None:
    assert _nonspace(remove_cjk_spaces(text)) == _nonspace(text)


def test_clean_text() -> None:
    assert clean_text(" 第 一 条\u3000总则 ") == "第一条总则"
    assert clean_text("a  \t b") == "a b"


def test_join_lines_rejoins_hyphenated_words_the_document_knows() -> None:
    words, compounds = word_vocabulary("Leave accrues monthly. You can opt-in any time.")
    assert join_lines(["Leave ac-", "crues monthly."], words, compounds) == "Leave accrues monthly."
    assert join_lines(["you can opt-", "in via HRLinks"], words, compounds) == (
        "you can opt-in via HRLinks"
    )
    assert join_lines(["the GSA Self-", "Service app"], words, compounds) == (
        "the GSA Self-Service app"
    )
    assert join_lines(["unknown hyph-", "enation"], words, compounds) == "unknown hyph-enation"


def test_join_lines_cjk_and_plain() -> None:
    assert join_lines(["劳动合同期满或者当事人约定的", "劳动合同终止"]) == (
        "劳动合同期满或者当事人约定的劳动合同终止"
    )
    assert join_lines(["Talk with your Workforce ", "Relations HR"]) == (
        "Talk with your Workforce Relations HR"
    )


@given(st.lists(st.text(alphabet=st.sampled_from(list("ab- 请假，1")), max_size=12), max_size=6))
def test_join_lines_keeps_every_character_without_vocabulary(lines: list[str]) -> None:
    assert _nonspace(join_lines(lines)) == _nonspace("".join(lines))


def test_starts_item() -> None:
    assert starts_item("• Annual Leave")
    assert starts_item("第十条 国家通过促进经济")
    assert starts_item("（三）劳动保护和劳动条件；")
    assert starts_item("2. Use unique passwords")
    assert not starts_item("the end of the leave year")
    assert not starts_item("2018 年 12 月 29 日")


def test_running_key_ignores_page_numbers() -> None:
    assert running_key("Page 3 of 12") == running_key("Page 11 of 12") == "page#of#"
    assert running_key(" - iv - ") == "-#-"


def test_strip_running_lines_headers_footers_and_numbers() -> None:
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    pages = [["ACME Handbook", w, f"{w} ends", f"Page {n} of 5"] for n, w in enumerate(words, 1)]
    assert strip_running_lines(pages) == [[w, f"{w} ends"] for w in words]


def test_strip_running_lines_keeps_lines_seen_on_few_pages() -> None:
    pages = [["Rules", "a"], ["b", "c"], ["Rules", "d"], ["e", "f"], ["g", "h"], ["i", "j"]]
    assert strip_running_lines(pages) == pages


def test_strip_running_lines_chapter_headers() -> None:
    pages = [["Chapter 1: Leave", f"x{n}", "y"] for n in range(3)]
    pages += [["Chapter 2: Travel", f"z{n}", "y"] for n in range(3)]
    stripped = strip_running_lines(pages, depth=1)
    assert all(not page[0].startswith("Chapter") for page in stripped)


def test_widths() -> None:
    assert display_width("ab请假") == 6
    assert typical_width(["a" * 80] * 9 + ["short"]) == 80


def test_running_lines_below_the_header_are_removed_too() -> None:
    """reportlab-made PDFs put the footer right after the header in the text order."""
    bodies = ["Annual leave.", "Sick leave.", "Travel.", "Expenses."]
    pages = [["ACME | Leave", "NW-1", "Internal | 3.0", f"Page {n}", body]
             for n, body in enumerate(bodies, 1)]
    assert strip_running_lines(pages) == [[body] for body in bodies]
