"""The web app: a Gradio Blocks page for employees (chat with cited answers) and admins
(documents, uploads, re-index), mounted on a FastAPI app that also serves `POST /api/ask`.

    blocks = build_app(services)              # the page; handlers call the pipelines only
    app = create_server(services)             # FastAPI: /api/ask + the page behind a login
    serve(settings)                           # opens the services, uvicorn on ui.host:port

Who is asking comes from the login (Gradio's session cookie -> `gr.Request.username`) or, in
demo mode, is the demo user; the user's groups are read from the ledger on every request and
drive every question, source view and file. Nothing the browser sends names a group.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import gradio as gr
from fastapi import FastAPI

from core.access import parse_groups
from core.config import Settings
from core.errors import AccessDenied, KbError
from core.types import Answer, Passage, Turn, User
from ingest.ocr import ocr_options
from ingest.pipeline import delete_document, ingest_paths, list_documents, store_status
from ingest.reindex import reindex
from ui import admin, marks, render
from ui.api import api_router
from ui.i18n import LANGS, lang_from_header, t
from ui.wiring import Services, open_services

logger = logging.getLogger(__name__)

DEMO_USER = User("demo", ("all",), is_admin=False)
LANG_CHOICES = [("English", "en"), ("中文", "zh")]


@dataclass
class Conversation:
    """One browser session's conversation, kept on the server (gr.State)."""

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
        self.demo = demo
        self.pages = Path(tempfile.mkdtemp(prefix="kb-pages-"))

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
        return lang, who, gr.update(visible=user.is_admin), gr.update(visible=not self.demo)

    # --- chat ---------------------------------------------------------------------------
    def ask(self, question: str, lang: str, conv: Conversation | None,
            request: gr.Request) -> Iterator[tuple[Any, ...]]:
        user = self.who(request)
        conv = conv or Conversation()
        lang = lang if lang in LANGS else "en"
        question = (question or "").strip()
        if not question:
            raise gr.Error(t("empty_question", lang))
        conv.chat = conv.chat + [{"role": "user", "content": render.escape(question)},
                                 {"role": "assistant", "content": t("thinking", lang)}]
        yield conv.chat, conv, "", gr.update()
        text = ""
        answer: Answer | None = None
        try:
            for piece in self.assistant.ask_stream(question, groups=user.groups,
                                                   history=conv.turns, user=user.name):
                if isinstance(piece, Answer):
                    answer = piece
                    break
                text += piece
                conv.chat[-1] = {"role": "assistant", "content": render.streaming_html(text)}
                yield conv.chat, conv, "", gr.update()
        except KbError as exc:
            conv.chat[-1] = {"role": "assistant", "content": render.escape(str(exc))}
            yield conv.chat, conv, "", gr.update()
            return
        if answer is None:
            return
        if not answer.question_id:
            answer.question_id = self.users.record_question(user.name, question, answer)
        index = len(conv.chat) - 1
        conv.chat[-1] = {"role": "assistant",
                         "content": render.answer_html(answer, f"q{answer.question_id}", lang)}
        conv.turns.append(Turn(question, answer.answer))
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
        yield conv.chat, conv, "", pick

    def new_conversation(self) -> tuple[Any, ...]:
        conv = Conversation()
        return conv.chat, conv, "", gr.update(choices=[], value=None), "", gr.update(
            value=None, visible=False), ""

    def view_source(self, chunk_id: str | None, lang: str, conv: Conversation | None,
                    request: gr.Request) -> tuple[Any, ...]:
        """The cited passage (and its PDF page as an image when poppler is installed); the
        user's groups are checked again here, whatever chunk id was sent."""
        user = self.who(request)
        if not chunk_id:
            return "", gr.update(value=None, visible=False)
        try:
            passage: Passage = self.assistant.source(chunk_id, user.groups)
            path = self.assistant.document_path(passage.doc_id, user.groups)
        except AccessDenied as exc:
            logger.warning("source view refused for %s: %s", user.name, exc)
            raise gr.Error(t("denied", lang)) from exc
        quote = (conv.quotes.get(chunk_id, "") if conv else "")
        image = None
        note = ""
        if passage.page and path.suffix.lower() == ".pdf":
            image = render.render_pdf_page(path, passage.page, self.pages, marks.PAGE_DPI)
            if image is None:
                note = t("no_pdftoppm", lang)
            else:  # the cited words marked on the page (text layer, else OCR)
                image = marks.mark_page(image, path, passage.page,
                                        marks.what_to_mark(quote, passage.text),
                                        marks.PAGE_DPI, ocr_options(self.settings.ingest))
        html = render.passage_html(passage, quote, lang, note)
        if image is None:
            return html, gr.update(value=None, visible=False)
        return html, gr.update(value=str(image), visible=True)

    def feedback(self, rating: int, comment: str, lang: str, conv: Conversation | None,
                 request: gr.Request) -> str:
        user = self.who(request)
        qid = conv.last_qid if conv else 0
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
        qid = conv.qids.get(index, 0) if conv else 0
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
            logger.info("%s ingested %d uploads into %s", user.name, len(stored), chosen)
        return admin.report_rows(report, rejected), self._docs()

    def delete(self, ref: str, request: gr.Request) -> tuple[Any, ...]:
        self.admin(request)
        record = delete_document(self.store, (ref or "").strip())
        return f"deleted {record.meta.path} ({record.chunk_count} chunks)", self._docs()

    def reindex(self, mode: str, request: gr.Request,
                progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:  # noqa: B008
        self.admin(request)

        def step(done: int, total: int, path: str) -> None:
            progress((done, max(total, 1)), desc=Path(path).name)

        report = reindex(self.store, full=(mode == "full"), progress=step)
        return admin.report_rows(report), self._docs()

    def admin_tables(self, request: gr.Request) -> tuple[Any, ...]:
        self.admin(request)
        return self._docs(), store_status(self.store), admin.feedback_rows(
            self.users.feedback())

    def known_groups(self) -> list[str]:
        groups = {"all"}
        for user in self.users.list_users():
            groups.update(user.groups)
        for record in list_documents(self.store):
            groups.update(record.meta.groups)
        groups.update(g for gs in self.settings.ingest.folder_groups.values() for g in gs)
        return sorted(groups)

    def _docs(self) -> list[list[Any]]:
        return admin.document_rows(list_documents(self.store))


def build_app(services: Services, demo: bool | None = None) -> gr.Blocks:
    """The Blocks page over the process's services."""
    settings = services.settings
    app = App(services, settings.ui.demo if demo is None else demo)
    labels: list[tuple[Any, dict[str, str]]] = []

    def lab(component: Any, **keys: str) -> Any:
        labels.append((component, keys))
        return component

    with gr.Blocks(title=t("title")) as blocks:
        conv = gr.State(Conversation())
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
                        source_img = gr.Image(type="filepath", interactive=False, visible=False,
                                              show_label=False, elem_id="kb-page")
            with gr.Tab(t("admin_tab"), id="admin", visible=False) as admin_tab:
                lab(admin_tab, label="admin_tab")
                with gr.Row():
                    files = lab(gr.File(label=t("upload"), file_count="multiple",
                                        file_types=[".pdf", ".docx"]), label="upload")
                    with gr.Column():
                        groups = lab(gr.Dropdown(choices=app.known_groups(), value=["all"],
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

        blocks.load(app.on_load, None, [lang, who, admin_tab, logout], api_visibility="private")
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
        send.click(app.ask, ask_inputs, ask_outputs, api_name="ask", concurrency_limit=8)
        question.submit(app.ask, ask_inputs, ask_outputs, api_visibility="private",
                        concurrency_limit=8)
        new.click(app.new_conversation, None,
                  [chatbot, conv, question, pick, source_html, source_img, fb_status],
                  api_name="new_conversation")
        view.click(app.view_source, [pick, lang, conv], [source_html, source_img],
                   api_name="view_source")
        pick.input(app.view_source, [pick, lang, conv], [source_html, source_img],
                   api_visibility="private")
        up.click(app.thumbs_up, [comment, lang, conv], fb_status, api_name="thumbs_up")
        down.click(app.thumbs_down, [comment, lang, conv], fb_status, api_name="thumbs_down")
        chatbot.like(app.on_like, [lang, conv], fb_status, api_visibility="private")

        ingest.click(app.ingest_upload, [files, groups], [report, docs], api_name="ingest")
        refresh.click(app.admin_tables, None, [docs, stats, feedback], api_name="admin_tables")
        admin_tab.select(app.admin_tables, None, [docs, stats, feedback], api_visibility="private")
        delete.click(app.delete, [doc_ref], [admin_msg, docs], api_name="delete")
        run_reindex.click(app.reindex, [mode], [report, docs], api_name="reindex")
    blocks.kb_app = app
    return cast(gr.Blocks, blocks)


def create_server(services: Services, demo: bool | None = None) -> FastAPI:
    """FastAPI with `POST /api/ask`, and the page at `/` behind the login (none in demo mode)."""
    settings, assistant, users = services.settings, services.assistant, services.users
    demo = settings.ui.demo if demo is None else demo
    blocks = build_app(services, demo)
    blocks.queue(default_concurrency_limit=4)
    server = FastAPI(title="kb-assistant", docs_url=None, redoc_url=None, openapi_url=None)
    server.include_router(api_router(assistant, users))
    server.state.kb_app = blocks.kb_app  # type: ignore[attr-defined]

    def check_login(name: str, password: str) -> bool:
        return users.authenticate(name, password) is not None

    return cast(FastAPI, gr.mount_gradio_app(
        server, blocks, path="/", auth=None if demo else check_login,
        auth_message=t("title") + " · " + t("title", "zh"),
        max_file_size=f"{int(settings.ui.upload_max_mb)}mb", css=render.CSS,
        footer_links=["api"], run_history=False, show_error=True,
    ))


def serve(settings: Settings, demo: bool | None = None, host: str | None = None,
          port: int | None = None) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    services = open_services(settings)
    try:
        app = create_server(services, demo=demo)
        uvicorn.run(app, host=host or settings.ui.host, port=port or settings.ui.port,
                    log_level="warning")
    finally:
        services.close()
