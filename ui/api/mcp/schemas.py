"""What the MCP tools give back, as pydantic models: the SDK publishes each as the tool's output
schema and sends each result as structured content (its JSON also as the text an agent reads).
The converters turn the domain types (Passage, Citation, Answer, DocRecord) into them; links are
absolute, from `ui.public_url`, and open the source view the page opens (which checks the
groups again and asks for a sign-in).

    passage_item(passage, meta, quote="5 days of sick leave.", base="https://kb.example.com",
                 today=date(2026, 12, 1), lang="en").link
        -> "https://kb.example.com/page/9f0c…?q=5%20days%20of%20sick%20leave."
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from assistant.answer_json import approved_day
from core.policy_dates import date_note
from core.types import Answer, Citation, DocMeta, DocRecord, Passage
from ui.api.kb_api import MAX_ANSWER_CHARS, MAX_QUESTION_CHARS
from ui.api.openai_api import link
from ui.i18n import t
from ui.page.render import mode_label

IN_FORCE = "in force"
Mode = Literal["generated", "retrieval_only", "fallback", "abstained", "approved"]
RESOURCE = "kb://documents/{doc_id}"  # a document as an MCP resource


def plain_nullables(schema: dict[str, Any]) -> None:
    """A model's JSON schema with each optional scalar as `"type": [X, "null"]` in place of
    pydantic's `anyOf` of two schemas: the same values, and less work for a client that checks
    each result against the output schema, as the spec asks (an `ask` result, with the
    `jsonschema` library the SDK's client uses: 0.52 -> 0.38 ms).

        {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Link"}
            -> {"type": ["string", "null"], "title": "Link"}
    """
    for field in schema.get("properties", {}).values():
        kinds = field.get("anyOf", [])
        if len(kinds) == 2 and {"type": "null"} in kinds:
            other = next(k for k in kinds if k != {"type": "null"})
            if set(other) == {"type"} and isinstance(other["type"], str):
                del field["anyOf"]
                field["type"] = [other["type"], "null"]


class Result(BaseModel):
    """A tool's result or a part of one."""

    model_config = ConfigDict(json_schema_extra=plain_nullables)


class PastTurn(BaseModel):
    question: str = Field(max_length=MAX_QUESTION_CHARS, description="An earlier question.")
    answer: str = Field(max_length=MAX_ANSWER_CHARS,
                        description="kb's answer to it, as `ask` gave it.")


class PassageItem(Result):
    passage: str = Field(description="The passage's id: give it to open_source for its whole "
                                     "text and the passages around it.")
    title: str = Field(description="The policy document's title.")
    file: str = Field(description="The document's file.")
    page: int | None = Field(description="The PDF page it starts on (from 1); null for Word.")
    page_end: int | None = Field(description="The PDF page it ends on.")
    page_label: str | None = Field(description="The page number printed on the page, where "
                                               "it differs (front matter: 'iv').")
    section: str = Field(description="Its heading path in the document ('2 Leave › 2.1 "
                                     "Annual'); the place to cite for a Word document.")
    effective: str | None = Field(description="The policy applies from this day (YYYY-MM-DD).")
    review_by: str | None = Field(description="The policy is due for review by this day.")
    expires: str | None = Field(description="The policy applies through this day.")
    standing: str = Field(description="'in force', or why to check it: 'review was due by "
                                      "…', 'not in force until …', 'expired …'.")
    superseded: bool = Field(description="A newer version of this policy is in force.")
    ocr: bool = Field(description="Read by OCR from a scan: check the words on the page.")
    quote: str = Field(description="The words to cite: its sentence that answers best.")
    text: str = Field(description="The passage.")
    link: str | None = Field(description="The source view in kb: the page or section with the "
                                         "cited words marked (the reader signs in).")


class SearchResult(Result):
    query: str
    passages: list[PassageItem] = Field(description="Best first; empty when nothing the "
                                                    "caller may read matches.")


class CitationItem(Result):
    n: int = Field(description="The number of its [n] marker in the answer.")
    passage: str = Field(description="The cited passage's id (open_source takes it).")
    file: str
    page: int | None
    page_label: str | None
    section: str
    quote: str = Field(description="The cited words.")
    supported: bool = Field(description="Whether the passage was found to support the "
                                        "sentence citing it (false: its marker was dropped).")
    review_due: str | None = Field(description="Its policy's review date, passed: check it "
                                               "with the document's owner.")
    link: str | None = Field(description="The source view in kb, the cited words marked.")


class Approval(Result):
    by: str
    on: str = Field(description="The day it was approved (YYYY-MM-DD).")


class AskResult(Result):
    answer: str = Field(description="kb's answer, its [n] markers citing `citations`.")
    mode: Mode = Field(
        description="generated: written by the model from the passages and checked against "
                    "them; approved: an answer an administrator approved; retrieval_only or "
                    "fallback: the best passages quoted in place of the model's text; "
                    "abstained: the documents do not cover the question.")
    says: str = Field(description="What the page shows above the answer about how it was "
                                  "made, in the question's language ('' for an abstention).")
    unverified: bool = Field(description="Some statements could not be matched to a source: "
                                         "check the citations.")
    notice: str | None = Field(description="Why the model's answer was not used, and the like.")
    searched_for: str = Field(description="What was searched for: the question, or a "
                                          "follow-up read with the history.")
    approved: Approval | None
    citations: list[CitationItem]
    model_answer: str | None = Field(description="The model's own text behind a fallback.")
    question_id: int = Field(description="kb's record of this question.")


class Neighbour(Result):
    passage: str
    page: int | None
    section: str
    text: str


class SourceResult(Result):
    passage: PassageItem
    before: list[Neighbour] = Field(description="The passages just before it in its "
                                                "document's chapter, in order.")
    after: list[Neighbour] = Field(description="The passages just after it, in order.")


class DocumentItem(Result):
    id: str
    title: str
    file: str
    language: str
    status: str = Field(description="'ok', or what went wrong with its last version "
                                    "('encrypted', 'no_text', 'broken', …).")
    reason: str
    searchable: bool = Field(description="Has live passages (search_policies can find it).")
    passages: int
    version: str
    effective: str | None
    review_by: str | None
    expires: str | None
    standing: str
    updated: str = Field(description="When kb last ingested it (UTC, ISO 8601).")
    resource: str = Field(description="The document as an MCP resource: its passages in "
                                      "order.")


class DocumentsResult(Result):
    documents: list[DocumentItem]
    total: int = Field(description="Documents the caller may see that match the filter.")


# --- converters ------------------------------------------------------------------------------

def standing(meta: DocMeta | None, today: dt.date) -> str:
    """What a policy's dates mean `today`: "in force", else core/policy_dates.py's note."""
    return (date_note(meta, today) if meta is not None else "") or IN_FORCE


def absolute(base: str, relative: str | None) -> str | None:
    """A link of the app's (`/page/…`) at `base` (`ui.public_url`).

        absolute("https://kb.example.com", "/page/x") -> "https://kb.example.com/page/x"
    """
    return base + relative if relative else None


def dates(meta: DocMeta | None) -> dict[str, str | None]:
    """A policy's dates as the results give them (None where it has none).

        dates(DocMeta(..., review_by="2026-06-30")) -> {"effective": None,
                                                      "review_by": "2026-06-30", "expires": None}
    """
    if meta is None:
        return {"effective": None, "review_by": None, "expires": None}
    return {"effective": meta.effective_date or None, "review_by": meta.review_by or None,
            "expires": meta.expires or None}


def passage_item(p: Passage, meta: DocMeta | None, quote: str, base: str, today: dt.date,
                 lang: str) -> PassageItem:
    cited = Citation(0, p.file, p.page, p.section_path, quote, p.chunk_id)
    return PassageItem(
        passage=p.chunk_id, title=p.title, file=p.file, page=p.page, page_end=p.page_end,
        page_label=p.page_label or None, section=p.section_path, **dates(meta),
        standing=standing(meta, today), superseded=p.superseded, ocr=p.from_ocr, quote=quote,
        text=p.text, link=absolute(base, link(cited, lang)))


def neighbour(p: Passage) -> Neighbour:
    return Neighbour(passage=p.chunk_id, page=p.page, section=p.section_path, text=p.text)


def ask_result(answer: Answer, base: str, lang: str) -> AskResult:
    """The answer as the page gives it. A retrieval-only answer's reason names the model
    server's address and error: like the page, the result says only that the model did not
    answer (the server log has the rest)."""
    mode = "abstained" if answer.abstained else answer.mode
    mark = answer.approved
    notice = t("model_down", lang) if answer.notice and mode == "retrieval_only" else (
        answer.notice or None)
    return AskResult(
        answer=answer.answer, mode=cast(Mode, mode),
        says=mode_label(answer, lang), unverified=answer.unverified,
        notice=notice, searched_for=answer.searched_for,
        approved=Approval(by=mark.author, on=approved_day(mark.approved_at)) if mark else None,
        citations=[CitationItem(
            n=c.n, passage=c.chunk_id, file=c.file, page=c.page, page_label=c.page_label or None,
            section=c.section, quote=c.quote, supported=c.supported,
            review_due=c.review_due or None, link=absolute(base, link(c, lang)))
            for c in answer.citations],
        model_answer=answer.raw_answer if mode == "fallback" else None,
        question_id=answer.question_id)


def document_item(record: DocRecord, today: dt.date) -> DocumentItem:
    meta = record.meta
    return DocumentItem(
        id=meta.id, title=meta.title, file=meta.path, language=meta.lang, status=record.status,
        reason=record.reason, searchable=record.searchable, passages=record.chunk_count,
        version=meta.version, **dates(meta), standing=standing(meta, today),
        updated=dt.datetime.fromtimestamp(record.updated_at, dt.UTC).isoformat(timespec="seconds"),
        resource=RESOURCE.format(doc_id=meta.id))
