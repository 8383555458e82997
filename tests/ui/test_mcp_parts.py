"""The MCP server's pure parts, without a store or a server process: the tools as an agent lists
them (names, descriptions, input and output schemas), the server built without touching this
process's logging, the audit digest, the resource metadata's address, the links and dates of a
result, and the page's line on how an answer was made. The tools at work, through real clients,
are tests/ui/test_mcp.py and test_mcp_oauth.py."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any

from core.config import UiSettings
from core.types import Answer, ApprovedMark, Citation, DocMeta, Passage
from ui.api.mcp.http import metadata_url
from ui.api.mcp.schemas import ask_result, dates, passage_item, standing
from ui.api.mcp.server import build_server
from ui.api.mcp.tools import digest
from ui.page.render import mode_label

TOOLS = {"search_policies", "ask", "open_source", "list_documents"}


def listed() -> list[Any]:
    return asyncio.run(build_server(None, None).list_tools())  # type: ignore[arg-type]


def test_each_tool_has_a_description_and_both_schemas() -> None:
    tools = {t.name: t for t in listed()}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and "polic" in tool.description
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema and tool.output_schema["type"] == "object"
        assert "ctx" not in tool.input_schema["properties"]  # the context is not an argument
    assert tools["search_policies"].input_schema["required"] == ["query"]
    assert tools["search_policies"].input_schema["properties"]["k"]["maximum"] == 20
    assert set(tools["ask"].input_schema["properties"]) == {"question", "history"}
    assert tools["ask"].output_schema["properties"]["mode"]["enum"] == [
        "generated", "retrieval_only", "fallback", "abstained", "approved"]
    passage = tools["search_policies"].output_schema["$defs"]["PassageItem"]["properties"]
    assert passage["link"]["type"] == ["string", "null"] and "anyOf" not in passage["link"]
    assert tools["ask"].annotations.read_only_hint is False  # it records the question
    assert tools["list_documents"].annotations.read_only_hint is True


def test_building_the_server_leaves_this_processs_logging_alone() -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    for handler in handlers:  # as a process that configured none (pytest's, put back)
        root.removeHandler(handler)
    try:
        build_server(None, None)  # type: ignore[arg-type]
        assert root.handlers == [] and root.level == level
    finally:
        for handler in handlers:
            root.addHandler(handler)


def test_the_audit_digest_names_the_arguments_not_their_words() -> None:
    one = digest({"query": "sick leave", "k": 5, "language": None})
    assert one == digest({"k": 5, "language": None, "query": "sick leave"})
    assert one != digest({"query": "sick leave", "k": 6, "language": None})
    assert len(one) == 64 and "sick" not in one


def test_the_resource_metadata_sits_before_the_resources_path() -> None:
    assert metadata_url("https://kb.example.com") == \
        "https://kb.example.com/.well-known/oauth-protected-resource/mcp"
    assert UiSettings(public_url="https://kb.example.com/").base_url == "https://kb.example.com"
    assert UiSettings(host="10.0.0.5", port=8080).base_url == "http://10.0.0.5:8080"


def test_a_passage_carries_its_policys_dates_and_an_absolute_link() -> None:
    meta = DocMeta("d1", "leave.pdf", "/srv", "x", 1, 0.0, effective_date="2024-01-01",
                   review_by="2026-06-30")
    passage = Passage("c1", "d1", "leave.pdf", "Sick leave is 5 days.", page=3,
                      title="Leave Policy")
    item = passage_item(passage, meta, "Sick leave is 5 days.", "https://kb.example.com",
                        dt.date(2026, 12, 1), "en")
    assert (item.effective, item.review_by, item.expires) == ("2024-01-01", "2026-06-30", None)
    assert item.standing == "review was due by 2026-06-30"
    assert item.link == "https://kb.example.com/page/c1?q=Sick%20leave%20is%205%20days."
    word = passage_item(Passage("c2", "d1", "it.docx", "Lock screens.", section=("3 Devices",)),
                        None, "Lock screens.", "https://kb.example.com", dt.date(2026, 12, 1),
                        "en")
    assert word.link and word.link.startswith("https://kb.example.com/section/c2")
    assert word.standing == "in force" and dates(None)["effective"] is None
    assert standing(DocMeta("d", "p", "/r", "x", 1, 0.0, expires="2023-12-31"),
                    dt.date(2024, 1, 1)) == "expired 2023-12-31"


def test_an_answer_says_how_it_was_made_as_the_page_does() -> None:
    cited = [Citation(1, "leave.pdf", 3, "", "5 days", "c1")]
    generated = ask_result(Answer("5 days [1].", citations=cited), "https://kb", "en")
    assert generated.says == "Written by the language model from the sources below"
    assert generated.citations[0].link == "https://kb/page/c1?q=5%20days"
    down = Answer("…", mode="retrieval_only",
                  notice="vLLM at http://10.0.0.9:8000/v1 did not answer")
    quoted = ask_result(down, "https://kb", "zh")
    assert quoted.says == "仅检索：语言模型暂不可用"
    assert quoted.notice and "10.0.0.9" not in quoted.notice  # the log has the address
    approved = Answer("5 days [1].", mode="approved", approved=ApprovedMark(3, "alice", 0.0))
    assert ask_result(approved, "https://kb", "en").approved is not None
    assert mode_label(approved, "en").startswith("Approved by alice on ")
    assert mode_label(Answer("not covered", abstained=True, mode="abstained"), "en") == ""
