"""Prompt templates and canned texts."""

from __future__ import annotations

from assistant.prompt import (
    abstention_text,
    build_messages,
    render_chat,
    retrieval_only_text,
    source_label,
)
from core.types import Passage

P = Passage(
    "c1", "d1", "leave.pdf", "You earn 6 hours.", ("3 Leave", "3.2 Annual"), 2, 3, title="Leave"
)


def test_messages_follow_the_question_language() -> None:
    zh = build_messages("年假几天？", "[1] x", [], "zh")
    en = build_messages("How many days?", "[1] x", [], "en")
    assert zh[0]["role"] == "system" and "[1]" in zh[0]["content"] and "资料" in zh[0]["content"]
    assert "passages" in en[0]["content"] and "[1]" in en[0]["content"]
    assert zh[-1] == {"role": "user", "content": "资料：\n[1] x\n\n问题：年假几天？"}
    assert en[-1]["content"].endswith("Question: How many days?")


def test_history_sits_between_rules_and_question() -> None:
    history = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}]
    roles = [m["role"] for m in build_messages("q2", "", history, "en")]
    assert roles == ["system", "user", "assistant", "user"]


def test_render_chat_matches_the_ernie_template() -> None:
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "U"},
        {"role": "assistant", "content": "A"},
        {"role": "user", "content": "V"},
    ]
    assert render_chat(messages) == (
        "<|begin_of_sentence|>S\nUser: U\nAssistant: A<|end_of_sentence|>User: V\nAssistant: "
    )


def test_source_label() -> None:
    assert source_label(P) == "《Leave》 p.2-3 | 3 Leave › 3.2 Annual"
    docx = Passage("c", "d", "law.docx", "t", ("第三章",))
    assert source_label(docx) == "《law.docx》 | 第三章"


def test_abstention_names_the_nearest_documents_once() -> None:
    assert abstention_text("zh").startswith("抱歉")
    text = abstention_text("en", [P, P])
    assert "don't cover" in text and text.count("《Leave》") == 1


def test_retrieval_only_quotes_numbered_passages() -> None:
    text = retrieval_only_text("zh", [P])
    assert "不可用" in text and "[1] 《Leave》 p.2-3" in text and "You earn 6 hours." in text
