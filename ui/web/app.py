"""The web app: a Gradio Blocks page for employees (chat with cited answers) and admins
(documents, uploads, re-index), mounted on a FastAPI app that also serves `POST /api/ask`.

    blocks = build_app(services)              # the page; handlers call the pipelines only
    app = create_server(services)             # FastAPI: /api/ask + the page behind a login
    serve(settings)                           # opens the services, uvicorn on ui.host:port

Who is asking comes from the login (Gradio's session cookie -> `gr.Request.username`, checked
by `ui/web/auth.py`: expiry, disabled users, password changes) or, in demo mode, is the demo user;
the user's groups are read from the ledger on every request and drive every question, source
view, page image, section view and file. Nothing the browser sends names a group. A
conversation belongs to the user who started it: another user who sends its session id gets
none of it, and Gradio's routes refuse them that session (`ui/web/guard.py`). Cited PDF pages come
from `GET /page/{chunk_id}` and cited Word sections from `GET /section/{chunk_id}`, which check
the asker's groups again; only admins may upload.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import gradio as gr
import pandas as pd
from fastapi import APIRouter, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Mount

from core.access import parse_groups
from core.config import Settings
from core.errors import AccessDenied, ConfigError, GenerationError, KbError
from core.text import detect_lang
from core.types import Answer, Passage, StoredTurn, Turn, User
from ingest.parse.ocr import ocr_options
from ingest.pipeline import delete_document, ingest_paths, list_documents, store_status
from ingest.reindex import reindex
from ui.web import admin, insights, marks, render
from ui.web.api import api_router
from ui.web.auth import LoginGuard, SessionTable, login_check, shared_cookie_id
from ui.web.bodies import BodyLimit, body_cap
from ui.web.gate import Gate
from ui.web.guard import GradioState, GuardGradio, SessionOwners, keep_private
from ui.web.i18n import LANGS, lang_from_header, t
from ui.web.metrics import CONTENT_TYPE, Metrics
from ui.web.metrics_access import MetricsAccess
from ui.web.proxies import TrustedProxies
from ui.wiring import Services, open_services

logger = logging.getLogger(__name__)

# The cited words sent to the page route to be marked: a quote is a sentence or two.
MARK_CHARS = 500
DEMO_USER = User("demo", ("all",), is_admin=False)
LANG_CHOICES = [("English", "en"), ("中文", "zh")]


@dataclass
class Conversation:
    """One browser session's conversation, kept on the server (gr.State), owned by the user
    who started it."""

    owner: str = ""
    id: str = ""  # the ledger's conversation (ui/conversations.py), once its first answer came
    chat: list[dict[str, str]] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    qids: dict[int, int] = field(default_factory=dict)  # chat index of an answer -> question id
    quotes: dict[str, str] = field(default_factory=dict)  # cited chunk id -> quote
    sources: list[tuple[str, str]] = field(default_factory=list)  # (label, chunk id)

    @property
    def last_qid(self) -> int:
        return self.qids[max(self.qids)] if self.qids else 0


class App:
    """The handlers behind the page; each one finds the user first and checks what it must."""

    def __init__(self, services: Services, demo: bool) -> None:
        self.settings = services.settings
        self.store = services.store
        self.assistant = services.assistant
        self.users = services.users
        self.metrics = services.metrics
        self.conversations = services.conversations
        self.demo = demo
        if services.settings.ui.queue_depth < 1:
            raise ConfigError(f"ui.queue_depth is {services.settings.ui.queue_depth}: it must "
                              "be at least 1 (how many questions may wait or run at once)")
        # one gate for the page and the API: questions past ui.queue_depth are refused at once
        self.gate = Gate(services.settings.ui.queue_depth)
        # Rendered pages stay in the store, readable by this account only, and are served by
        # `GET /page/{chunk_id}` after a group check (never through Gradio's file route).
        self.pages = services.settings.store_path() / "cache" / "pages"
        self.exports = services.settings.store_path() / "cache" / "exports"
        for folder in (self.pages, self.exports):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(folder, 0o700)

    # --- who ----------------------------------------------------------------------------
    def who(self, request: gr.Request | None) -> User:
        if self.demo:
            return DEMO_USER
        name = getattr(request, "username", None) if request is not None else None
        user = self.users.get(name) if name else None
        if user is None:
            raise gr.Error(t("not_signed_in"))
        return user

    def admin(self, request: gr.Request | None) -> User:
        user = self.who(request)
        if not user.is_admin:
            logger.warning("admin action refused for %s", user.name)
            raise gr.Error(t("admin_only"))
        return user

    def on_load(self, request: gr.Request) -> tuple[Any, ...]:
        lang = lang_from_header(request.headers.get("accept-language"))
        user = self.who(request)
        who = t("signed_in", lang, user=user.name, groups=", ".join(user.groups))
        # group names reach admins only, and only those they may give (none are in /config)
        choices = self.known_groups(user) if user.is_admin else []
        return (lang, who, gr.update(visible=user.is_admin), gr.update(visible=not self.demo),
                gr.update(choices=choices, value=[g for g in ("all",) if g in choices]))

    @staticmethod
    def mine(conv: Conversation | None, user: User) -> Conversation | None:
        """The session's conversation when `user` owns it (or it is fresh), else None."""
        if conv is None or not conv.owner:
            return Conversation(owner=user.name)
        if conv.owner != user.name:
            logger.warning("%s sent the session of %s's conversation: refused", user.name,
                           conv.owner)
            return None
        return conv

    def sees(self, admin: User, groups: Any) -> bool:
        """Whether an admin view may show something of `groups`."""
        return admin.see_all or bool(set(admin.groups) & set(groups))

    # --- chat ---------------------------------------------------------------------------
    def ask(self, question: str, lang: str, conv: Conversation | None,
            request: gr.Request) -> Iterator[tuple[Any, ...]]:
        user = self.who(request)
        lang = lang if lang in LANGS else "en"
        question = (question or "").strip()
        if not question:
            raise gr.Error(t("empty_question", lang))
        if not self.gate.enter():  # ui.queue_depth questions already: refuse now, not later
            self.metrics.busy.labels(via="app").inc()
            logger.warning("question of %s refused: %d questions at once", user.name,
                           self.gate.depth)
            raise gr.Error(t("busy", lang))
        try:
            yield from self._answer(question, lang, conv, user)
        finally:
            self.gate.leave()

    def _answer(self, question: str, lang: str, conv: Conversation | None,
                user: User) -> Iterator[tuple[Any, ...]]:
        owned = self.mine(conv, user)
        # someone else's session: answer in a fresh conversation and leave theirs untouched
        conv = owned if owned is not None else Conversation(owner=user.name)
        out_state: Any = conv if owned is not None else gr.skip()
        conv.chat = conv.chat + [{"role": "user", "content": render.escape(question)},
                                 {"role": "assistant", "content": t("thinking", lang)}]
        yield conv.chat, out_state, "", gr.update()
        text = ""
        answer: Answer | None = None
        self.metrics.in_flight.inc()
        try:
            for piece in self.assistant.ask_stream(question, groups=user.groups,
                                                   history=conv.turns, user=user.name):
                if isinstance(piece, Answer):
                    answer = piece
                    break
                text += piece
                conv.chat[-1] = {"role": "assistant", "content": render.streaming_html(text)}
                yield conv.chat, out_state, "", gr.update()
        except GenerationError as exc:  # its text names internal URLs: the log has it
            self.metrics.failed(type(exc).__name__, via="app")
            logger.warning("question of %s failed: %s", user.name, exc)
            conv.chat[-1] = {"role": "assistant", "content": render.escape(t("model_down", lang))}
            yield conv.chat, out_state, "", gr.update()
            return
        except KbError as exc:
            self.metrics.failed(type(exc).__name__, via="app")
            conv.chat[-1] = {"role": "assistant", "content": render.escape(str(exc))}
            yield conv.chat, out_state, "", gr.update()
            return
        finally:
            self.metrics.in_flight.dec()
        if answer is None:
            return
        if not answer.question_id:
            answer.question_id = self.users.record_question(user.name, question, answer)
        self.metrics.answered(answer, detect_lang(question), via="app", user=user.name)
        index = len(conv.chat) - 1
        conv.chat[-1] = {"role": "assistant",
                         "content": render.answer_html(answer, f"q{answer.question_id}", lang)}
        conv.turns.append(Turn(question, answer.answer))
        self._keep_turn(user, conv, question, answer)
        conv.qids[index] = answer.question_id
        for c in answer.citations:
            conv.quotes[c.chunk_id] = c.quote
        where = render.where
        conv.sources = [(f"[{c.n}] {where(c.file, c.page, c.section, lang, c.page_label)}",
                         c.chunk_id) for c in answer.citations if c.chunk_id]
        if not conv.sources:  # abstentions: the nearest documents can be opened too
            conv.sources = [(where(p.file, p.page, p.section_path, lang, p.page_label),
                             p.chunk_id) for p in answer.passages]
        pick = gr.update(choices=conv.sources,
                         value=conv.sources[0][1] if conv.sources else None)
        yield conv.chat, out_state, "", pick

    def new_conversation(self, conv: Conversation | None,
                         request: gr.Request) -> tuple[Any, ...]:
        user = self.who(request)
        state: Any = Conversation(owner=user.name) if self.mine(conv, user) else gr.skip()
        return [], state, "", gr.update(choices=[], value=None), "", ""

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
            raise gr.Error(t("denied", lang)) from exc
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
            src = "page/" + urllib.parse.quote(chunk_id, safe="")
            if quote:
                src += "?q=" + urllib.parse.quote(quote[:MARK_CHARS], safe="")
            alt = render.escape(t("page_image", lang))
            html += f'<img class="kb-page" src="{src}" alt="{alt}" style="max-width:100%">'
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

    def section_page(self, chunk_id: str, user: User, quote: str = "", lang: str = "en") -> str:
        """The HTML page of a passage's chapter for `user`, scrolled to the passage with the
        cited words (`quote`, else its first sentence) marked; AccessDenied outside their
        groups."""
        passages = self.assistant.section(chunk_id, user.groups)
        cited = next(p for p in passages if p.chunk_id == chunk_id)
        mark = marks.what_to_mark(quote[:MARK_CHARS], cited.text)
        return render.section_html(passages, chunk_id, mark, lang if lang in LANGS else "en")

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

    def on_like(self, lang: str, conv: Conversation | None, data: gr.LikeData,
                request: gr.Request) -> str:
        user = self.who(request)
        index = data.index if isinstance(data.index, int) else data.index[0]
        owned = self.mine(conv, user)
        qid = owned.qids.get(index, 0) if owned else 0
        if not qid:
            return t("no_answer_yet", lang)
        self.users.record_feedback(qid, user.name, 1 if data.liked else -1)
        return t("feedback_saved", lang)

    # --- admin --------------------------------------------------------------------------
    def ingest_upload(self, files: list[Any] | None, groups: list[str] | None,
                      request: gr.Request,
                      progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:  # noqa: B008
        user = self.admin(request)
        chosen = parse_groups(groups or []) or self.settings.ingest.default_groups
        if not user.see_all and not set(chosen) <= set(user.groups):
            raise gr.Error(t("groups_outside", groups=", ".join(user.groups)))
        pairs = []
        for f in files or []:
            temp = Path(f if isinstance(f, str) else getattr(f, "name", str(f)))
            pairs.append((temp, getattr(f, "orig_name", None) or temp.name))
        stored, rejected = admin.store_uploads(self.settings, pairs, chosen)
        report = None
        if stored:
            progress((0, len(stored)), desc="ingest")

            def step(done: int, total: int, path: str) -> None:
                progress((done, total), desc=Path(path).name)

            report = ingest_paths(self.store, stored, list(chosen), progress=step)
            self.metrics.ingested(report)
            logger.info("%s ingested %d uploads into %s", user.name, len(stored), chosen)
        return admin.report_rows(report, rejected), self._docs(user)

    def delete(self, ref: str, request: gr.Request) -> tuple[Any, ...]:
        user = self.admin(request)
        ref = (ref or "").strip()
        found = [r for r in list_documents(self.store) if ref in (r.meta.id, r.meta.path)]
        if not found or not all(self.sees(user, r.meta.groups) for r in found):
            raise gr.Error(f"no document {ref!r} in your groups")
        record = delete_document(self.store, ref)
        return f"deleted {record.meta.path} ({record.chunk_count} chunks)", self._docs(user)

    def reindex(self, mode: str, request: gr.Request,
                progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:  # noqa: B008
        user = self.admin(request)

        def step(done: int, total: int, path: str) -> None:
            progress((done, max(total, 1)), desc=Path(path).name)

        report = reindex(self.store, full=(mode == "full"), progress=step)
        self.metrics.ingested(report)
        rows = [r for r in admin.report_rows(report) if self._row_visible(user, r[0])]
        return rows, self._docs(user)

    def admin_tables(self, request: gr.Request) -> tuple[Any, ...]:
        user = self.admin(request)
        return self._docs(user), store_status(self.store), admin.feedback_rows(
            self.users.feedback(viewer=user))

    def insights(self, request: gr.Request) -> tuple[Any, ...]:
        """The admin's view of use: figures, plots, cited documents and knowledge gaps, all
        within what the admin may see; the gaps also as a CSV file."""
        user = self.admin(request)
        rows = self.users.question_records(viewer=user)
        names = {r.meta.id: r.meta.path for r in list_documents(self.store)
                 if r.status == "ok" and self.sees(user, r.meta.groups)}
        doc_of = {chunk: names[doc] for chunk, doc in self.store.ledger.chunk_documents().items()
                  if doc in names}
        most, never = insights.cited_documents(rows, doc_of, names.values())
        gaps = insights.knowledge_gaps(rows, self.users.gap_notes())
        export = self.exports / f"knowledge-gaps-{user.name}.csv"
        export.write_text(insights.gaps_csv(gaps), encoding="utf-8")
        figures = insights.summary(rows)
        return (
            figures,
            pd.DataFrame(insights.daily_table(rows), columns=["day", "language", "questions"]),
            pd.DataFrame([(stage, pct, ms) for stage, by in insights.latency(rows).items()
                          for pct, ms in by.items() if ms is not None],
                         columns=["stage", "percentile", "ms"]),
            [[name, n] for name, n in most],
            ", ".join(never),
            insights.gap_rows(gaps),
            gr.update(choices=[(g.question, g.key) for g in gaps], value=None),
            str(export),
        )

    def save_gap_note(self, key: str | None, note: str, request: gr.Request) -> tuple[Any, ...]:
        user = self.admin(request)
        if key:
            self.users.set_gap_note(key, note or "", user.name)
        return self.insights(request)

    def known_groups(self, admin_user: User | None = None) -> list[str]:
        """The groups an admin may give documents: their own, or every known one (see-all)."""
        if admin_user is not None and not admin_user.see_all:
            return sorted(admin_user.groups)
        groups = {"all"}
        for user in self.users.list_users():
            groups.update(user.groups)
        for record in list_documents(self.store):
            groups.update(record.meta.groups)
        groups.update(g for gs in self.settings.ingest.folder_groups.values() for g in gs)
        return sorted(groups)

    def _row_visible(self, user: User, name: str) -> bool:
        docs = [r for r in list_documents(self.store) if Path(r.meta.path).name == name]
        return not docs or any(self.sees(user, r.meta.groups) for r in docs)

    def _docs(self, user: User) -> list[list[Any]]:
        return admin.document_rows([r for r in list_documents(self.store)
                                    if self.sees(user, r.meta.groups)])

    # --- stored conversations (issue 15; ui/conversations.py) ----------------------------
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
            turns = self.conversations.turns(user.name, record.id)
        except KbError as exc:
            raise gr.Error(t("no_such_conversation", lang)) from exc
        resumed = self._resumed(user, record.id, turns, lang)
        state: Any = resumed if self.mine(conv, user) is not None else gr.skip()
        pick = gr.update(choices=resumed.sources,
                         value=resumed.sources[0][1] if resumed.sources else None)
        return resumed.chat, state, pick, "", "", record.title

    def _resumed(self, user: User, conversation_id: str, turns: list[StoredTurn],
                 lang: str) -> Conversation:
        """The chat state of a stored conversation, as the user may see it now: an answer
        citing a document since moved outside the user's groups is withheld."""
        conv = Conversation(owner=user.name, id=conversation_id)
        cited = [c.chunk_id for turn in turns for c in turn.citations if c.chunk_id]
        mine = set(user.groups)
        hidden = {chunk for chunk, groups in self.store.ledger.chunk_groups(cited).items()
                  if not mine & set(groups)}
        for turn in turns:
            withheld = any(c.chunk_id in hidden for c in turn.citations)
            answer = Answer(t("answer_withheld", lang) if withheld else turn.answer,
                            abstained=turn.mode == "abstained",
                            citations=[] if withheld else list(turn.citations),
                            mode="abstained" if withheld else turn.mode,
                            unverified=turn.unverified,
                            raw_answer="" if withheld else turn.raw_answer,
                            question_id=turn.question_id)
            key = f"q{turn.question_id}" if turn.question_id else f"c{turn.ordinal}"
            conv.chat = conv.chat + [
                {"role": "user", "content": render.escape(turn.question)},
                {"role": "assistant", "content": render.answer_html(answer, key, lang)}]
            conv.turns.append(Turn(turn.question, answer.answer))
            if turn.question_id:
                conv.qids[len(conv.chat) - 1] = turn.question_id
            for c in answer.citations:
                conv.quotes[c.chunk_id] = c.quote
            where = render.where
            conv.sources = [(f"[{c.n}] {where(c.file, c.page, c.section, lang, c.page_label)}",
                             c.chunk_id) for c in answer.citations if c.chunk_id]
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
            raise gr.Error(str(exc)) from exc
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
            raise gr.Error(t("no_such_conversation", lang)) from exc
        fresh = Conversation(owner=user.name)
        return ([], fresh, gr.update(choices=[], value=None), t("conversation_deleted", lang),
                *self.sidebar(fresh, request))


def build_app(services: Services, demo: bool | None = None) -> gr.Blocks:
    """The Blocks page over the process's services."""
    settings = services.settings
    app = App(services, settings.ui.demo if demo is None else demo)
    labels: list[tuple[Any, dict[str, str]]] = []

    def lab(component: Any, **keys: str) -> Any:
        labels.append((component, keys))
        return component

    # Gradio's cache (uploads, outputs): files older than an hour go, checked every hour
    with gr.Blocks(title=t("title"), delete_cache=(3600, 3600)) as blocks:
        conv = gr.State(Conversation())
        # stored conversations (issue 15): the user's, newest first; a click resumes one
        with gr.Sidebar(open=True, elem_id="kb-sidebar"):
            conv_list = lab(gr.Radio(choices=[], label=t("conversations"),
                                     elem_id="kb-conversations"), label="conversations")
            conv_title = lab(gr.Textbox(label=t("conversation_title"), lines=1,
                                        elem_id="kb-conv-title"), label="conversation_title")
            with gr.Row():
                rename = lab(gr.Button(t("rename"), size="sm", elem_id="kb-rename"),
                             value="rename")
                forget = lab(gr.Button(t("delete_conversation"), size="sm", variant="stop",
                                       elem_id="kb-forget"), value="delete_conversation")
            conv_msg = gr.Markdown(elem_id="kb-conv-msg")
        with gr.Row(equal_height=True):
            title = gr.Markdown(f"## {t('title')}")
            who = gr.Markdown(elem_id="kb-who")
            lang = gr.Radio(LANG_CHOICES, value="en", label=t("language"), show_label=False,
                            container=False, elem_id="kb-lang", scale=0, min_width=180)
            logout = lab(gr.Button(t("logout"), link="/logout", size="sm", scale=0,
                                   visible=not app.demo), value="logout")
        with gr.Tabs():
            with gr.Tab(t("chat_tab"), id="chat") as chat_tab:
                lab(chat_tab, label="chat_tab")
                with gr.Row():
                    with gr.Column(scale=3):
                        chatbot = gr.Chatbot(height=520, elem_id="kb-chat", show_label=False,
                                             buttons=["copy"])
                        question = lab(gr.Textbox(label=t("question"), placeholder=t("placeholder"),
                                                  lines=2, elem_id="kb-question"),
                                       label="question", placeholder="placeholder")
                        with gr.Row():
                            send = lab(gr.Button(t("send"), variant="primary", elem_id="kb-send"),
                                       value="send")
                            new = lab(gr.Button(t("new_chat"), elem_id="kb-new"), value="new_chat")
                        with gr.Accordion(t("feedback"), open=False) as fb_box:
                            lab(fb_box, label="feedback")
                            comment = lab(gr.Textbox(label=t("comment"), lines=1), label="comment")
                            with gr.Row():
                                up = lab(gr.Button(t("thumbs_up"), size="sm"), value="thumbs_up")
                                down = lab(gr.Button(t("thumbs_down"), size="sm"),
                                           value="thumbs_down")
                            fb_status = gr.Markdown()
                    with gr.Column(scale=2):
                        pick = lab(gr.Dropdown(choices=[], label=t("pick_source"),
                                               elem_id="kb-source-pick"), label="pick_source")
                        view = lab(gr.Button(t("view_source"), elem_id="kb-view"),
                                   value="view_source")
                        source_html = gr.HTML(elem_id="kb-source")
            with gr.Tab(t("admin_tab"), id="admin", visible=False) as admin_tab:
                lab(admin_tab, label="admin_tab")
                with gr.Row():
                    files = lab(gr.File(label=t("upload"), file_count="multiple",
                                        file_types=[".pdf", ".docx"]), label="upload")
                    with gr.Column():
                        groups = lab(gr.Dropdown(choices=[], value=[],
                                                 multiselect=True, allow_custom_value=True,
                                                 label=t("groups")), label="groups")
                        ingest = lab(gr.Button(t("ingest"), variant="primary"), value="ingest")
                report = lab(gr.Dataframe(headers=admin.REPORT_HEADERS, label=t("report"),
                                          interactive=False), label="report")
                docs = lab(gr.Dataframe(headers=admin.DOC_HEADERS, label=t("documents"),
                                        interactive=False), label="documents")
                with gr.Row():
                    refresh = lab(gr.Button(t("refresh"), size="sm"), value="refresh")
                    doc_ref = lab(gr.Textbox(label=t("delete_doc"), lines=1), label="delete_doc")
                    delete = lab(gr.Button(t("delete"), variant="stop", size="sm"), value="delete")
                    mode = gr.Radio(["incremental", "full"], value="incremental",
                                    label=t("reindex_mode"))
                    labels.append((mode, {"label": "reindex_mode"}))
                    run_reindex = lab(gr.Button(t("reindex"), size="sm"), value="reindex")
                admin_msg = gr.Markdown()
                stats = lab(gr.JSON(label=t("stats")), label="stats")
                feedback = lab(gr.Dataframe(headers=admin.FEEDBACK_HEADERS,
                                            label=t("feedback_list"), interactive=False),
                               label="feedback_list")
                with gr.Accordion(t("insights"), open=False) as insights_box:
                    lab(insights_box, label="insights")
                    show = lab(gr.Button(t("refresh"), size="sm"), value="refresh")
                    figures = lab(gr.JSON(label=t("figures")), label="figures")
                    with gr.Row():
                        per_day = lab(gr.BarPlot(x="day", y="questions", color="language",
                                                 label=t("per_day")), label="per_day")
                        latency = lab(gr.BarPlot(x="stage", y="ms", color="percentile",
                                                 label=t("latency")), label="latency")
                    cited = lab(gr.Dataframe(headers=["document", "answers citing it"],
                                             label=t("most_cited"), interactive=False),
                                label="most_cited")
                    never = lab(gr.Textbox(label=t("never_cited"), interactive=False),
                                label="never_cited")
                    gaps = lab(gr.Dataframe(headers=list(insights.GAP_COLUMNS),
                                            label=t("gaps"), interactive=False), label="gaps")
                    with gr.Row():
                        gap_pick = lab(gr.Dropdown(choices=[], label=t("gap")), label="gap")
                        gap_note = lab(gr.Textbox(label=t("gap_note"), lines=1),
                                       label="gap_note")
                        save_note = lab(gr.Button(t("save"), size="sm"), value="save")
                    export = lab(gr.DownloadButton(t("export_csv"), size="sm"),
                                 label="export_csv")

        blocks.load(app.on_load, None, [lang, who, admin_tab, logout, groups],
                    api_visibility="private")
        components = [c for c, _ in labels]

        def relabel(code: str, request: gr.Request) -> list[Any]:
            code = code if code in LANGS else "en"
            user = app.who(request)
            out: list[Any] = []
            for _component, keys in labels:
                out.append({"__type__": "update",
                            **{attr: t(key, code) for attr, key in keys.items()}})
            out.append(f"## {t('title', code)}")
            out.append(t("signed_in", code, user=user.name, groups=", ".join(user.groups)))
            return out

        lang.change(relabel, lang, [*components, title, who], api_visibility="private")
        ask_inputs = [question, lang, conv]
        ask_outputs = [chatbot, conv, question, pick]
        # no limit of Gradio's own: every question reaches app.ask at once, whose gate
        # (ui.queue_depth, shared with the API) admits it or says "busy, try again"
        asked = [send.click(app.ask, ask_inputs, ask_outputs, api_name="ask",
                            concurrency_limit=None),
                 question.submit(app.ask, ask_inputs, ask_outputs, api_visibility="private",
                                 concurrency_limit=None)]
        started = new.click(app.new_conversation, conv,
                            [chatbot, conv, question, pick, source_html, fb_status],
                            api_name="new_conversation")
        view.click(app.view_source, [pick, lang, conv], source_html, api_name="view_source")
        pick.input(app.view_source, [pick, lang, conv], source_html, api_visibility="private")
        up.click(app.thumbs_up, [comment, lang, conv], fb_status, api_name="thumbs_up")
        down.click(app.thumbs_down, [comment, lang, conv], fb_status, api_name="thumbs_down")
        chatbot.like(app.on_like, [lang, conv], fb_status, api_visibility="private")

        ingest.click(app.ingest_upload, [files, groups], [report, docs], api_name="ingest")
        refresh.click(app.admin_tables, None, [docs, stats, feedback], api_name="admin_tables")
        admin_tab.select(app.admin_tables, None, [docs, stats, feedback], api_visibility="private")
        delete.click(app.delete, [doc_ref], [admin_msg, docs], api_name="delete")
        run_reindex.click(app.reindex, [mode], [report, docs], api_name="reindex")
        seen = [figures, per_day, latency, cited, never, gaps, gap_pick, export]
        show.click(app.insights, None, seen, api_name="insights")
        insights_box.expand(app.insights, None, seen, api_visibility="private")
        save_note.click(app.save_gap_note, [gap_pick, gap_note], seen, api_name="gap_note")

        # stored conversations (issue 15)
        side = [conv_list, conv_title]
        blocks.load(app.sidebar, conv, side, api_name="conversations")
        for event in [*asked, started]:
            event.then(app.sidebar, conv, side, api_visibility="private")
        conv_list.input(app.resume, [conv_list, lang, conv],
                        [chatbot, conv, pick, source_html, fb_status, conv_title],
                        api_name="resume")
        rename.click(app.rename_conversation, [conv_title, lang, conv],
                     [conv_msg, *side], api_name="rename_conversation")
        forget.click(app.delete_conversation, [lang, conv],
                     [chatbot, conv, pick, conv_msg, *side], api_name="delete_conversation")
    blocks.kb_app = app
    return cast(gr.Blocks, blocks)


def create_server(services: Services, demo: bool | None = None) -> FastAPI:
    """FastAPI with `POST /api/ask` and `GET /page/{chunk_id}`, and the page at `/` behind the
    login (none in demo mode), with Gradio's sessions, uploads and files guarded and its temp
    folder private (`ui/web/guard.py`)."""
    settings, assistant, users = services.settings, services.assistant, services.users
    demo = settings.ui.demo if demo is None else demo
    blocks = build_app(services, demo)
    kb_app: App = blocks.kb_app  # type: ignore[attr-defined]
    # Gradio runs at most max_threads events at once (queue slots and threads); beyond the
    # admitted questions, room is left for the refusals and the other events
    blocks.max_threads = max(40, kb_app.gate.depth + 16)
    blocks.queue(default_concurrency_limit=4)
    sessions = SessionTable(users, settings.ui.session_hours * 3600)
    ui = settings.ui
    guard = LoginGuard(users.ledger, ui.login_max_failures, ui.login_max_failures_per_address,
                       ui.login_lockout_s)
    cookies: list[str] = []  # Gradio's session cookie names, known once it is mounted
    proxies = TrustedProxies.parse(ui.trusted_proxies, "ui.trusted_proxies")
    scrapers = MetricsAccess.parse(ui.metrics_allow, ui.metrics_token)
    max_body = body_cap(ui.max_body_bytes)

    def session_user(request: Request) -> User | None:
        if demo:
            return DEMO_USER
        for name in cookies:
            user = sessions.user(request.cookies.get(name))
            if user is not None:
                return user
        return None

    server = FastAPI(title="kb-assistant", docs_url=None, redoc_url=None, openapi_url=None)
    server.include_router(api_router(assistant, users, services.metrics, kb_app.gate,
                                     settings.ui.busy_retry_after_s, services.conversations))
    server.add_api_route("/metrics", metrics_route(services.metrics, scrapers),
                         methods=["GET"], include_in_schema=False)
    server.include_router(page_router(kb_app, session_user))
    server.state.kb_app = kb_app
    server.state.login_guard = guard

    mounted = gr.mount_gradio_app(
        server, blocks, path="/",
        auth=None if demo else login_check(users, ui, guard,
                                           services.metrics.login_failures.inc),
        auth_message=t("title") + " · " + t("title", "zh"),
        max_file_size=f"{int(ui.upload_max_mb)}mb", css=render.CSS,
        footer_links=["api"], run_history=False, show_error=False,
        # FastAPI's schema of Gradio's own routes answered anyone at /openapi.json: gone.
        # Gradio's /gradio_api/info and /gradio_api/openapi.json (the "Use via API" page) ask
        # for a login.
        app_kwargs={"openapi_url": None},
    )
    gradio_app: Any = next(r.app for r in mounted.routes if isinstance(r, Mount))
    gradio_app.tokens = sessions
    gradio_app.cookie_id = shared_cookie_id(users)  # one cookie name for every app process
    cookie_id = gradio_app.cookie_id
    cookies += [f"access-token-{cookie_id}", f"access-token-unsecure-{cookie_id}"]
    keep_private(Path(gradio_app.uploaded_file_dir))
    # a session hash is its first user's: Gradio binds it to nobody (ui/web/guard.py)
    gradio = GradioState(gradio_app)
    owners = SessionOwners(4 * blocks.state_session_capacity, gradio.known)
    # bodies are capped inside GuardGradio (which settles the address the refusal logs);
    # uploads, for admins only, keep Gradio's own limit per file (ui.upload_max_mb)
    mounted.add_middleware(BodyLimit, max_bytes=max_body, exempt=GuardGradio.UPLOADS)
    mounted.add_middleware(GuardGradio, session_user=session_user, owners=owners,
                           event_session=gradio.event_session, proxies=proxies)
    if settings.retrieve.refresh_s > 0:  # see what other processes ingest (issue 13)
        services.on_close.append(assistant.retriever.refresh_every(settings.retrieve.refresh_s))
    services.metrics.snapshot_generation.set_function(lambda: assistant.retriever.generation)
    services.metrics.ledger_generation.set_function(services.store.ledger.generation)
    return cast(FastAPI, mounted)


def metrics_route(metrics: Metrics, access: MetricsAccess) -> Any:
    """`GET /metrics` in Prometheus text format, for the addresses of `ui.metrics_allow` and a
    scraper that sends `ui.metrics_token` as a bearer token (401 or 403 for anyone else)."""

    async def route(request: Request) -> Response:
        address = request.client.host if request.client else "?"
        verdict = access.verdict(address, request.headers.get("authorization", ""))
        if verdict == 200:
            return Response(metrics.render(), media_type=CONTENT_TYPE)
        logger.warning("/metrics refused for %s (%d)", address, verdict)
        if verdict == 401:
            return JSONResponse({"error": "/metrics: send ui.metrics_token as the bearer token "
                                          "(none or a wrong one came)"},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return JSONResponse({"error": f"/metrics: {address} is not in ui.metrics_allow (add "
                                      "the scraper's address there, or give it "
                                      "ui.metrics_token)"}, status_code=403)

    return route


def page_router(app: App, session_user: Any) -> APIRouter:
    """`GET /page/{chunk_id}`: the PDF page of a passage as a PNG, for a signed-in user whose
    groups include the passage's document (404 otherwise: no hint that it exists)."""
    router = APIRouter()

    @router.get("/page/{chunk_id}")
    async def page(chunk_id: str, request: Request, q: str = "") -> Response:
        user = await run_in_threadpool(session_user, request)
        if user is None:
            return JSONResponse({"error": "not signed in"}, status_code=401)
        try:
            image = await run_in_threadpool(app.page_image, chunk_id, user, q)
        except AccessDenied:
            logger.warning("page image refused for %s: %s", user.name, chunk_id[:80])
            image = None
        if image is None:
            return JSONResponse({"error": "no such page"}, status_code=404)
        return FileResponse(image, media_type="image/png",
                            headers={"Cache-Control": "private, no-store"})

    @router.get("/section/{chunk_id}")
    async def section(chunk_id: str, request: Request, q: str = "", lang: str = "en") -> Response:
        user = await run_in_threadpool(session_user, request)
        if user is None:
            return JSONResponse({"error": "not signed in"}, status_code=401)
        try:
            page = await run_in_threadpool(app.section_page, chunk_id, user, q, lang)
        except AccessDenied:
            logger.warning("section view refused for %s: %s", user.name, chunk_id[:80])
            return JSONResponse({"error": "no such passage"}, status_code=404)
        return HTMLResponse(page, headers=SECTION_HEADERS)

    return router


# The section page holds document text only: no scripts, no requests, framed by the app alone.
SECTION_HEADERS = {
    "Cache-Control": "private, no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
                               "frame-ancestors 'self'",
    "X-Content-Type-Options": "nosniff",
}


def section_frame(chunk_id: str, quote: str, lang: str) -> str:
    """The source view's frame of `GET /section/{chunk_id}` (group-checked there), scrolled to
    the cited passage, and a link that opens it in a tab of its own."""
    src = render.escape(render.section_url(chunk_id, quote[:MARK_CHARS], lang))
    title = render.escape(t("section_view", lang))
    return (f'<iframe class="kb-section" src="{src}" title="{title}" '
            'style="width:100%;height:480px;border:1px solid #e5e7eb;border-radius:4px">'
            f'</iframe><p><a href="{src}" target="_blank" rel="noopener">'
            f"{render.escape(t('open_tab', lang))}</a></p>")


# uvicorn's own X-Forwarded-For handling is off: by default it believes the header from
# 127.0.0.1, so a client on the app's host could name any address. GuardGradio believes it
# only from ui.trusted_proxies. The tests serve the app with these options too.
UVICORN_OPTIONS: dict[str, Any] = {"proxy_headers": False, "log_level": "warning"}


def serve(settings: Settings, demo: bool | None = None, host: str | None = None,
          port: int | None = None) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    services = open_services(settings, warm=True)
    try:
        app = create_server(services, demo=demo)
        uvicorn.run(app, host=host or settings.ui.host, port=port or settings.ui.port,
                    **UVICORN_OPTIONS)
    finally:
        services.close()
