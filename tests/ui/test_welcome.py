"""The empty chat says what the library holds and offers example questions from it."""

from __future__ import annotations

from ui.page.welcome import example_questions, heading_words, welcome_html


def test_examples_come_from_approved_answers_then_the_documents_headings() -> None:
    sections = [("Employee Leave Policy", "2.4 Carry-over of unused leave"),
                ("差旅费管理办法", "一、住宿标准"),
                ("IT Security Policy", "3.2 Lost or stolen devices")]
    assert example_questions(sections, [], "en", most=2) == [
        "What does Employee Leave Policy say about carry-over of unused leave?",
        "What does 差旅费管理办法 say about 住宿标准?"]
    assert example_questions(sections[1:2], [], "zh") == [
        "《差旅费管理办法》关于“住宿标准”有什么规定？"]
    approved = ["When do I need a doctor's note?", "When do I need a doctor's note?"]
    assert example_questions(sections, approved, "en", most=2)[0] == approved[0]
    assert heading_words("第三章住宿费") == "住宿费" and heading_words("Purpose") == "Purpose"


def test_the_welcome_names_the_documents_escaped_in_the_page_language() -> None:
    text = welcome_html(["Leave <Policy>", "差旅费管理办法"], "en")
    assert "The library holds 2 documents" in text and "Leave &lt;Policy&gt;" in text
    assert "资料库中有 2 份" in welcome_html(["A"] * 2, "zh")
    assert "no documents" in welcome_html([], "en")
