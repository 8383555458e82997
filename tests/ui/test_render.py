"""The pure parts of the app: HTML of answers and cards, upload checks, labels."""

from __future__ import annotations

import dataclasses
import re
import zipfile
from pathlib import Path

from core.config import Settings
from core.types import Answer, Citation, Passage
from ui.admin import uploads
from ui.i18n import lang_from_header, t
from ui.page import render


def passage(chunk_id: str = "c1", superseded: bool = False) -> Passage:
    return Passage(chunk_id, "d1", "leave.pdf", "Staff may carry over 5 days.\nAsk HR.",
                   section=("2 Leave", "2.4 Carry-over"), page=3, superseded=superseded)


def test_citation_markers_become_links_to_their_cards() -> None:
    answer = Answer("You may carry over 5 days [1]. <b>x</b> [7]",
                    citations=[Citation(1, "leave.pdf", 3, "2 Leave › 2.4", "carry over 5 days",
                                        "c1")],
                    passages=[passage(superseded=True)], timings_ms={"retrieve": 5, "total": 90})
    out = render.answer_html(answer, "q4", "en")
    assert '<a href="#kb-q4-1" class="kb-cite" data-n="1">[1]</a>' in out
    assert 'id="kb-q4-1"' in out and "[7]</div>" in out  # no card, no link
    assert "<b>x</b>" not in out and "&lt;b&gt;x&lt;/b&gt;" in out  # model text is escaped
    assert "<mark>carry over 5 days</mark>" in out
    assert "superseded" in out and "page 3" in out and "2.4" in out
    assert "retrieve 5 ms" in out and "first token – ms" in out
    assert "\n\n" not in out  # one HTML block: Markdown leaves it alone
    assert 'data-mode="generated"' in out and "Written by the language model" in out


def test_a_fallback_shows_passages_and_keeps_the_model_text_behind_a_toggle() -> None:
    fallback = Answer("Passages [1]", citations=[Citation(1, "leave.pdf", 3, "", "5 days", "c1")],
                      passages=[passage()], mode="fallback", notice="repeated itself",
                      raw_answer="<i>loop</i> loop")
    out = render.answer_html(fallback, "q3", "en")
    assert 'data-mode="fallback"' in out and "could not be checked" in out
    assert "<summary>Show the model&#x27;s answer</summary>" in out
    assert "&lt;i&gt;loop&lt;/i&gt; loop" in out and "<i>loop</i>" not in out
    assert "查看模型的回答" in render.answer_html(fallback, "q3", "zh")


def test_retrieval_only_and_abstained_say_so_in_the_chosen_language() -> None:
    only = Answer("Passages [1]", citations=[Citation(1, "leave.pdf", 3, "", "5 days", "c1")],
                  passages=[passage()], mode="retrieval_only", notice="vLLM down")
    assert 'data-mode="retrieval_only"' in render.answer_html(only, "q1", "en")
    assert "仅检索" in render.answer_html(only, "q1", "zh")
    gone = Answer("The documents don't cover this.", abstained=True, mode="abstained")
    assert 'data-mode="abstained"' in render.answer_html(gone, "q2", "en")


def test_highlight_and_escape() -> None:
    assert render.highlight("a <b> c", "<b>") == "a <mark>&lt;b&gt;</mark> c"
    assert render.highlight("abc", "zzz") == "abc"
    assert render.escape("x\n\ny") == "x<br><br>y"
    assert render.where("差旅.pdf", 2, "", "zh") == "差旅.pdf · 第 2 页"
    assert render.where("a.pdf", 3, "", "en", "i") == "a.pdf · page 3 (printed i)"


def test_sniff_type_checks_content_not_the_name(tmp_path: Path) -> None:
    pdf = tmp_path / "a.docx"
    pdf.write_bytes(b"%PDF-1.7\n...")
    assert uploads.sniff_type(pdf) == "pdf"
    docx = tmp_path / "b.pdf"
    with zipfile.ZipFile(docx, "w") as zf:
        zf.writestr("[Content_Types].xml", "<x/>")
        zf.writestr("word/document.xml", "<x/>")
    assert uploads.sniff_type(docx) == "docx"
    other_zip = tmp_path / "c.docx"
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("hello.txt", "hi")
    assert uploads.sniff_type(other_zip) is None
    text = tmp_path / "d.pdf"
    text.write_text("hello")
    assert uploads.sniff_type(text) is None


def test_safe_names_and_stored_uploads(tmp_path: Path) -> None:
    assert uploads.safe_name("../../etc/差旅 费 (2024).PDF", "pdf") == "差旅_费_2024.pdf"
    assert uploads.safe_name("..\\..\\x.docx", "docx") == "x.docx"
    assert uploads.safe_name(".pdf", "pdf") == "upload.pdf"
    assert uploads.safe_name("$(rm -rf).pdf", "pdf") == "rm_-rf.pdf"
    settings = Settings().with_store(tmp_path / "store")
    good = tmp_path / "tmp1"
    good.write_bytes(b"%PDF-1.4 tiny")
    bad = tmp_path / "tmp2"
    bad.write_text("not a pdf")
    big = tmp_path / "tmp3"
    big.write_bytes(b"%PDF-" + b"0" * (51 * 1024 * 1024))
    stored, rejected = uploads.store_uploads(
        settings, [(good, "../Leave policy.pdf"), (bad, "x.pdf"), (big, "big.pdf")], ["hr", "all"])
    assert stored == [tmp_path / "store" / "uploads" / "all+hr" / "Leave_policy.pdf"]
    assert [r.name for r in rejected] == ["x.pdf", "big.pdf"]
    assert "upload limit" in rejected[1].reason


def test_labels_follow_the_browser() -> None:
    assert lang_from_header("zh-CN,zh;q=0.9,en;q=0.8") == "zh"
    assert lang_from_header("en-US,en;q=0.9,zh;q=0.8") == "en"
    assert lang_from_header("fr-FR, zh;q=0.5") == "zh"
    assert lang_from_header(None) == "en"
    assert t("send", "zh") == "发送" and t("send", "en") == "Send"
    assert t("signed_in", "en", user="bob", groups="all") == "Signed in as bob · groups: all"


def test_section_page_heads_the_chapter_and_marks_the_cited_passage() -> None:
    def part(cid: str, section: tuple[str, ...], text: str) -> Passage:
        return Passage(cid, "d1", "leave.docx", text, section=section, title="Leave <Policy>")

    passages = [part("a", ("2 Leave", "2.1 Days"), "Staff get 15 days."),
                part("b", ("2 Leave", "2.2 Carry-over"), "Carry over 5 days. Ask <HR>."),
                part("c", ("2 Leave", "2.2 Carry-over"), "Forms go to payroll.")]
    out = render.section_html(passages, "b", "Ask <HR>.", "en")
    assert out.startswith("<!doctype html>") and "<script" not in out
    assert "<b>Leave &lt;Policy&gt;</b>" in out and "2 Leave › 2.2 Carry-over" in out
    assert [h for h in re.findall(r"<h\d>([^<]+)</h\d>", out)] == \
        ["2 Leave", "2.1 Days", "2.2 Carry-over"]
    assert '<div id="kb-cited"' in out and "<mark>Ask &lt;HR&gt;.</mark>" in out
    assert '<div class="kb-in-section"><p>Forms go to payroll.</p>' in out
    assert '<div><p>Staff get 15 days.</p>' in out  # same chapter, another section


def test_a_word_citation_card_opens_its_section_and_a_pdf_card_does_not() -> None:
    word = Citation(1, "leave.docx", None, "2 Leave", "carry over 5 days", "c 1")
    card = render.source_card(word, None, "q1", "zh")
    assert ('<a class="kb-open" href="section/c%201?lang=zh&amp;q=carry%20over%205%20days'
            '#kb-cited" target="_blank"') in card and "在文档中打开此章节" in card
    pdf = Citation(1, "leave.pdf", 3, "", "carry over 5 days", "c2")
    assert "kb-open" not in render.source_card(pdf, None, "q1", "en")


def test_a_passage_read_by_ocr_carries_the_badge_on_its_card_and_in_view_source() -> None:
    """The badge when one of the passage's pages was a scan (pages 3-4, scan on 4), in both
    languages; none when its scanned page lies outside it or nothing was scanned."""
    cite = Citation(1, "leave.pdf", 3, "", "carry over 5 days", "c1")
    scanned = dataclasses.replace(passage(), page_end=4, ocr_pages=(4, 9))
    badge = '<span class="kb-badge">read by OCR from a scan: check the page image</span>'
    assert badge in render.source_card(cite, scanned, "q1", "en")
    assert badge in render.passage_html(scanned, "carry over", "en")
    answer = Answer("You may carry over 5 days [1].", citations=[cite], passages=[scanned])
    assert badge in render.answer_html(answer, "q1", "en")
    assert "扫描件经OCR识别" in render.source_card(cite, scanned, "q1", "zh")
    for typed in (passage(), dataclasses.replace(passage(), ocr_pages=(9,))):
        assert "OCR" not in render.source_card(cite, typed, "q1", "en")
        assert "OCR" not in render.passage_html(typed, "carry over", "en")


def test_a_follow_up_says_what_was_searched_for_escaped_in_the_chosen_language() -> None:
    asked = 'And for <b>part-time</b> "staff"?'
    searched = f"{asked} (days annual leave {{carry}})\n\nx"
    cite = Citation(1, "leave.pdf", 3, "", "carry over 5 days", "c1")
    answer = Answer("Pro rata [1].", citations=[cite], passages=[passage()],
                    searched_for=searched)
    out = render.answer_html(answer, "q5", "en", asked)
    line = ('<p class="kb-searched">Searched for: And for &lt;b&gt;part-time&lt;/b&gt; '
            "&quot;staff&quot;? (days annual leave {carry})<br><br>x</p>")
    assert line in out and "<b>part-time</b>" not in out and "\n\n" not in out
    # under the answer's text, above its sources
    assert out.index("Pro rata") < out.index(line) < out.index("<summary>Sources")
    zh = render.answer_html(answer, "q5", "zh", asked)
    assert '<p class="kb-searched">检索内容：And for &lt;b&gt;part-time' in zh
    assert "Searched for" not in zh
    gone = Answer("The documents don't cover this.", abstained=True, mode="abstained",
                  searched_for=searched)  # a wrong reading is most likely why it abstained
    assert line in render.answer_html(gone, "q6", "en", asked)


def test_no_searched_for_line_when_the_question_was_searched_as_asked() -> None:
    asked = "How many days of annual leave can I carry over?"
    for searched in ("", "  ", asked, f"  {asked}\n"):  # "" from code that does not say
        answer = Answer("5 days.", searched_for=searched)
        assert "kb-searched" not in render.answer_html(answer, "q1", "en", asked)
        assert render.searched_line(searched, asked, "zh") == ""
    assert render.searched_line("And? (leave)", "And?", "en") == \
        '<p class="kb-searched">Searched for: And? (leave)</p>'


def test_a_card_shows_headings_as_headings_tables_as_tables_and_marks_only_what_answers() -> None:
    text = ("一、住宿标准\n住宿费按城市级别实行限额标准：\n| 城市级别 | 住宿标准 |\n"
            "| 一线城市 | 800 |\n| 其他城市 | 350 |\n一线城市每晚不超过800元。")
    hotel = Passage("c9", "d2", "差旅.pdf", text, section=("第三章住宿费", "一、住宿标准"), page=3)
    card = render.source_card(Citation(1, "差旅.pdf", 3, hotel.section_path,
                                       "| 一线城市 | 800 |", "c9"), hotel, "q1", "zh")
    assert '<span class="kb-head">一、住宿标准</span>' in card
    assert "<th>城市级别</th>" in card and '<tr class="kb-hit"><td>一线城市</td>' in card
    assert "| 一线城市" not in card and "<mark>" not in card  # no pipes; the row is the mark
    sentence = render.source_card(Citation(1, "差旅.pdf", 3, "", "一线城市每晚不超过800元。",
                                           "c9"), hotel, "q1", "zh")
    assert sentence.count("<mark>") == 1 and "<mark>一线城市每晚不超过800元。</mark>" in sentence


def test_an_answer_with_table_rows_shows_a_table_and_links_its_citation() -> None:
    answer = Answer("据[1]：\n\n| 城市级别 | 住宿标准 |\n| --- | --- |\n| 一线城市 | 800 |",
                    citations=[Citation(1, "差旅.pdf", 3, "", "| 一线城市 | 800 |", "c9")],
                    mode="retrieval_only")
    out = render.answer_html(answer, "q2", "zh")
    assert '<table class="kb-table"><tr><th>城市级别</th><th>住宿标准</th></tr>' in out
    assert "---" not in out and 'href="#kb-q2-1"' in out
