"""The chat tab's handlers and the sidebar's: a question answered as it streams, its cited
sources opened (the passage, its PDF page marked, its Word section), feedback on answers, and
the user's stored conversations (list, resume, rename, delete, a new one).

    for chat, state, box, pick in handlers.ask(question, lang, conv, request): ...
    handlers.view_source(chunk_id, lang, conv, request)  # HTML: the passage, its page or section
    handlers.page_image(chunk_id, user, quote)           # for GET /page/{chunk_id} (server.py)
    handlers.resume(conversation_id, lang, conv, request)

Every handler finds the user first (`ui/handlers.py`) and asks the assistant with the user's
groups, whatever chunk or conversation id the browser sent.
"""

from __future__ import annotations

import logging
import shutil
import time
import urllib.parse
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import gradio as gr

from core.errors import AccessDenied, GenerationError, KbError
from core.text import detect_lang
from core.types import Answer, Passage, StoredTurn, Turn, User
from ingest.parse.ocr import ocr_options
from ui.conversations import WITHHELD
from ui.handlers import Conversation, Handlers, UserError
from ui.i18n import LANGS, t
from ui.page import marks, render

logger = logging.getLogger(__name__)

# The cited words sent to the page route to be marked: a quote is a sentence or two.
MARK_CHARS = 500

# what each step of an answer sends the page: the chat, the session's state, the question
# box (emptied) and the source picker
Step = tuple[Any, ...]


class ChatHandlers(Handlers):
    """The chat tab's and the sidebar's handlers."""

    # --- a question and its answer -------------------------------------------------------
    def ask(self, question: str, lang: str, conv: Conversation | None,
            request: gr.Request) -> Iterator[Step]:
        user = self.who(request)
        lang = lang if lang in LANGS else "en"
        question = (question or "").strip()
        if not question:
            raise UserError(t("empty_question", lang))
        if not self.gate.enter():  # ui.queue_depth questions already: refuse now, not later
            self.metrics.busy.labels(via="app").inc()
            logger.warning("question of %s refused: %d questions at once", user.name,
                           self.gate.depth)
            raise UserError(t("busy", lang))
        try:
            # the answer's labels (badge, sources, pages) in the language it was asked in
            yield from self._answer(question, detect_lang(question), conv, user)
        finally:
            self.gate.leave()

    def _answer(self, question: str, lang: str, conv: Conversation | None,
                user: User) -> Iterator[Step]:
        owned = self.mine(conv, user)
        # someone else's session: answer in a fresh conversation and leave theirs untouched
        conv = owned if owned is not None else Conversation(owner=user.name)
        out_state: Any = conv if owned is not None else gr.skip()
        conv.chat = conv.chat + [{"role": "user", "content": render.escape(question)},
                                 {"role": "assistant", "content": t("thinking", lang)}]
        yield conv.chat, out_state, "", gr.update()
        answer = yield from self._stream(question, lang, conv, user, out_state)
        if answer is None:
            return
        self._keep_answer(question, lang, conv, user, answer)
        yield conv.chat, out_state, "", source_pick(conv.sources)

    def _stream(self, question: str, lang: str, conv: Conversation, user: User,
                out_state: Any) -> Generator[Step, None, Answer | None]:
        """The answer's text into the chat's last message as it comes, and the Answer at its
        end; None when there is none (a failure's message is shown in its place)."""
        text = ""
        self.metrics.in_flight.inc()
        try:
            for piece in self.assistant.ask_stream(question, groups=user.groups,
                                                   history=conv.turns, user=user.name):
                if isinstance(piece, Answer):
                    return piece
                text += piece
                conv.chat[-1] = {"role": "assistant", "content": render.streaming_html(text)}
                yield conv.chat, out_state, "", gr.update()
        except GenerationError as exc:  # its text names internal URLs: the log has it
            self.metrics.failed(type(exc).__name__, via="app")
            logger.warning("question of %s failed: %s", user.name, exc)
            conv.chat[-1] = {"role": "assistant", "content": render.escape(t("model_down", lang))}
            yield conv.chat, out_state, "", gr.update()
        except KbError as exc:
            self.metrics.failed(type(exc).__name__, via="app")
            conv.chat[-1] = {"role": "assistant", "content": render.escape(str(exc))}
            yield conv.chat, out_state, "", gr.update()
        finally:
            self.metrics.in_flight.dec()
        return None

    def _keep_answer(self, question: str, lang: str, conv: Conversation, user: User,
                     answer: Answer) -> None:
        """A finished answer recorded (its question, the metrics, the stored conversation) and
        shown in the chat, its cited sources (else the nearest passages) ready to open."""
        if not answer.question_id:
            answer.question_id = self.users.record_question(user.name, question, answer)
        self.metrics.answered(answer, detect_lang(question), via="app", user=user.name)
        index = len(conv.chat) - 1
        conv.chat[-1] = {"role": "assistant",
                         "content": render.answer_html(answer, f"q{answer.question_id}", lang,
                                                       question)}
        conv.turns.append(Turn(question, answer.answer))
        self._keep_turn(user, conv, question, answer)
        conv.qids[index] = answer.question_id
        for c in answer.citations:
            conv.quotes[c.chunk_id] = c.quote
        # abstentions cite nothing: the nearest documents can be opened too
        conv.sources = cited_sources(answer, lang) or nearest_sources(answer, lang)

    def new_conversation(self, conv: Conversation | None,
                         request: gr.Request) -> tuple[Any, ...]:
        user = self.who(request)
        state: Any = Conversation(owner=user.name) if self.mine(conv, user) else gr.skip()
        return [], state, "", gr.update(choices=[], value=None), "", ""

    # --- the cited sources -------------------------------------------------------------
    def view_source(self, chunk_id: str | None, lang: str, conv: Conversation | None,
                    request: gr.Request | None) -> str:
        """The cited passage, and its PDF page as an image from `page/{chunk_id}` (which checks
        the groups again); the user's groups are checked here, whatever chunk id was sent."""
        user = self.who(request)
        if not chunk_id:
            return ""
        try:
            passage: Passage = self.assistant.source(chunk_id, user.groups)
            path = self.assistant.document_path(passage.doc_id, user.groups)
        except AccessDenied as exc:
            logger.warning("source view refused for %s: %s", user.name, exc)
            self.audit.soon("source.view", user.name, object=chunk_id[:200], outcome="denied",
                            address=self.address(request), kind="passage")
            raise UserError(t("denied", lang)) from exc
        self.audit.soon("source.view", user.name, object=str(path), address=self.address(request),
                        kind="passage", chunk=chunk_id, page=passage.page,
                        section=passage.section_path)
        owned = self.mine(conv, user)
        quote = owned.quotes.get(chunk_id, "") if owned else ""
        quote = marks.what_to_mark(quote, "") if quote else ""  # a retrieval-only quote's lead
        pdf_page = bool(passage.page) and path.suffix.lower() == ".pdf"
        if pdf_page and shutil.which("pdftoppm") is None:
            return render.passage_html(passage, quote, lang, t("no_pdftoppm", lang))
        html = render.passage_html(passage, quote, lang, "")
        if not passage.page:  # a Word passage: its document opened at the cited section
            html += section_frame(chunk_id, quote, lang)
        if pdf_page:  # the route marks the cited words on it (text layer, else OCR)
            html += page_img(chunk_id, quote, lang)
        return html

    def page_image(self, chunk_id: str, user: User, quote: str = "") -> Path | None:
        """The PNG of the page a passage starts on, for `user`, with the cited words (`quote`,
        else the passage's first sentence) marked; AccessDenied outside their groups, None
        when the page cannot be rendered."""
        passage = self.assistant.source(chunk_id, user.groups)
        path = self.assistant.document_path(passage.doc_id, user.groups)
        if not passage.page or path.suffix.lower() != ".pdf":
            return None
        image = render.render_pdf_page(path, passage.page, self.pages, marks.PAGE_DPI)
        if image is None:
            return None
        return marks.mark_page(image, path, passage.page,
                               marks.what_to_mark(quote[:MARK_CHARS], passage.text),
                               marks.PAGE_DPI, ocr_options(self.settings.ingest))

    def record_view(self, user: User, chunk_id: str, kind: str, address: str,
                    outcome: str = "ok") -> None:
        """A page or section route's view in the audit trail: who opened which document's
        page or section (written by the trail's writer thread, off the request)."""
        details: dict[str, Any] = {"kind": kind, "chunk": chunk_id[:200]}
        target = chunk_id[:200]
        if outcome == "ok":
            passage = self.assistant.source(chunk_id, user.groups)
            target = str(self.assistant.document_path(passage.doc_id, user.groups))
            details.update(page=passage.page, section=passage.section_path)
        self.audit.soon("source.view", user.name, object=target, outcome=outcome,
                        address=address, **details)

    def section_page(self, chunk_id: str, user: User, quote: str = "", lang: str = "en") -> str:
        """The HTML page of a passage's chapter for `user`, scrolled to the passage with the
        cited words (`quote`, else its first sentence) marked; AccessDenied outside their
        groups."""
        passages = self.assistant.section(chunk_id, user.groups)
        cited = next(p for p in passages if p.chunk_id == chunk_id)
        mark = marks.what_to_mark(quote[:MARK_CHARS], cited.text)
        return render.section_html(passages, chunk_id, mark, lang if lang in LANGS else "en")

    # --- feedback ----------------------------------------------------------------------
    def feedback(self, rating: int, comment: str, lang: str, conv: Conversation | None,
                 request: gr.Request) -> str:
        user = self.who(request)
        owned = self.mine(conv, user)
        qid = owned.last_qid if owned else 0
        if not qid:
            return t("no_answer_yet", lang)
        self.users.record_feedback(qid, user.name, rating, comment or "")
        return t("feedback_saved", lang)

    def thumbs_up(self, comment: str, lang: str, conv: Conversation | None,
                  request: gr.Request) -> str:
        return self.feedback(1, comment, lang, conv, request)

    def thumbs_down(self, comment: str, lang: str, conv: Conversation | None,
                    request: gr.Request) -> str:
        return self.feedback(-1, comment, lang, conv, request)

    # --- the sidebar: stored conversations (ui/conversations.py) --------------------------
    def _keep_turn(self, user: User, conv: Conversation, question: str, answer: Answer) -> None:
        """Store the answered question in the user's conversation, started on its first one.
        A conversation deleted in another tab goes on as a new one; a ledger that cannot be
        written costs the user no answer (the log has it)."""
        try:
            if conv.id:
                try:
                    self.conversations.add_turn(user.name, conv.id, question, answer)
                    return
                except KbError:
                    conv.id = ""
            conv.id = self.conversations.start(user.name, question)
            self.conversations.add_turn(user.name, conv.id, question, answer)
        except Exception:
            logger.exception("could not store the conversation turn of %s", user.name)

    def sidebar(self, conv: Conversation | None, request: gr.Request) -> tuple[Any, str]:
        """The user's conversations, newest first (the open one selected), and its title."""
        user = self.who(request)
        owned = self.mine(conv, user)
        current = owned.id if owned else ""
        records = self.conversations.list_for(user.name)
        choices = [(f"{c.title} · {time.strftime('%m-%d %H:%M', time.localtime(c.updated_at))}",
                    c.id) for c in records]
        title = next((c.title for c in records if c.id == current), "")
        return gr.update(choices=choices, value=current if title else None), title

    def resume(self, conversation_id: str | None, lang: str, conv: Conversation | None,
               request: gr.Request) -> tuple[Any, ...]:
        """Open one of the user's stored conversations: its turns with their citations, and
        the next question goes on from them. Anyone else's id gets an error and nothing."""
        user = self.who(request)
        lang = lang if lang in LANGS else "en"
        try:
            record = self.conversations.get(user.name, conversation_id or "")
            turns = self.conversations.visible_turns(user, record.id)
        except KbError as exc:
            raise UserError(t("no_such_conversation", lang)) from exc
        resumed = self._resumed(user, record.id, turns, lang)
        state: Any = resumed if self.mine(conv, user) is not None else gr.skip()
        return resumed.chat, state, source_pick(resumed.sources), "", "", record.title

    def _resumed(self, user: User, conversation_id: str, turns: list[StoredTurn],
                 lang: str) -> Conversation:
        """The chat state of a stored conversation from its turns as the user may see them now
        (`Conversations.visible_turns`): a withheld answer says so, and the model gets the same
        history as the API's (`Conversations.history`)."""
        conv = Conversation(owner=user.name, id=conversation_id)
        for turn in turns:
            withheld = turn.mode == WITHHELD
            answer = Answer(t("answer_withheld", lang) if withheld else turn.answer,
                            abstained=turn.mode == "abstained", citations=list(turn.citations),
                            mode="abstained" if withheld else turn.mode,
                            unverified=turn.unverified, raw_answer=turn.raw_answer,
                            question_id=turn.question_id, searched_for=turn.searched_for)
            key = f"q{turn.question_id}" if turn.question_id else f"c{turn.ordinal}"
            conv.chat = conv.chat + [
                {"role": "user", "content": render.escape(turn.question)},
                {"role": "assistant",
                 "content": render.answer_html(answer, key, lang, turn.question)}]
            conv.turns.append(Turn(turn.question, turn.answer))
            if turn.question_id:
                conv.qids[len(conv.chat) - 1] = turn.question_id
            for c in answer.citations:
                conv.quotes[c.chunk_id] = c.quote
            conv.sources = cited_sources(answer, lang)
        return conv

    def rename_conversation(self, title: str, lang: str, conv: Conversation | None,
                            request: gr.Request) -> tuple[Any, ...]:
        user = self.who(request)
        owned = self.mine(conv, user)
        if owned is None or not owned.id:
            return t("open_one_first", lang), *self.sidebar(conv, request)
        try:
            self.conversations.rename(user.name, owned.id, title)
        except KbError as exc:
            raise UserError(str(exc)) from exc
        return t("renamed", lang), *self.sidebar(conv, request)

    def delete_conversation(self, lang: str, conv: Conversation | None,
                            request: gr.Request) -> tuple[Any, ...]:
        """Delete the open conversation and start a fresh one."""
        user = self.who(request)
        owned = self.mine(conv, user)
        if owned is None or not owned.id:
            return (gr.skip(), gr.skip(), gr.skip(), t("open_one_first", lang),
                    *self.sidebar(conv, request))
        try:
            self.conversations.delete(user.name, owned.id)
        except KbError as exc:
            raise UserError(t("no_such_conversation", lang)) from exc
        fresh = Conversation(owner=user.name)
        return ([], fresh, gr.update(choices=[], value=None), t("conversation_deleted", lang),
                *self.sidebar(fresh, request))


def cited_sources(answer: Answer, lang: str) -> list[tuple[str, str]]:
    """The source picker's choices for an answer's citations: ("[1] leave.pdf · page 3",
    chunk id), one per cited chunk."""
    return [(f"[{c.n}] {render.where(c.file, c.page, c.section, lang, c.page_label)}",
             c.chunk_id) for c in answer.citations if c.chunk_id]


def nearest_sources(answer: Answer, lang: str) -> list[tuple[str, str]]:
    """The source picker's choices for the passages an answer was given: ("leave.pdf · page
    3", chunk id)."""
    return [(render.where(p.file, p.page, p.section_path, lang, p.page_label), p.chunk_id)
            for p in answer.passages]


def source_pick(sources: list[tuple[str, str]]) -> Any:
    """The source picker offering `sources`, the first one chosen."""
    return gr.update(choices=sources, value=sources[0][1] if sources else None)


def page_img(chunk_id: str, quote: str, lang: str) -> str:
    """The source view's image of `GET /page/{chunk_id}` (group-checked there), the cited
    words sent along to be marked."""
    src = "page/" + urllib.parse.quote(chunk_id, safe="")
    if quote:
        src += "?q=" + urllib.parse.quote(quote[:MARK_CHARS], safe="")
    alt = render.escape(t("page_image", lang))
    return f'<img class="kb-page" src="{src}" alt="{alt}" style="max-width:100%">'


def section_frame(chunk_id: str, quote: str, lang: str) -> str:
    """The source view's frame of `GET /section/{chunk_id}` (group-checked there), scrolled to
    the cited passage, and a link that opens it in a tab of its own."""
    src = render.escape(render.section_url(chunk_id, quote[:MARK_CHARS], lang))
    title = render.escape(t("section_view", lang))
    return (f'<iframe class="kb-section" src="{src}" title="{title}" '
            'style="width:100%;height:480px;border:1px solid #e5e7eb;border-radius:4px">'
            f'</iframe><p><a href="{src}" target="_blank" rel="noopener">'
            f"{render.escape(t('open_tab', lang))}</a></p>")
