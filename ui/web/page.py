"""The page: a Gradio Blocks page for employees (chat with cited answers, and the sidebar of
their stored conversations) and admins (documents, uploads, re-index, insights), and `App`,
the one object whose handlers answer it.

    blocks = build_app(services)     # the page; its App is blocks.kb_app
    blocks.kb_app.view_source(chunk_id, "en", None, request)

Each part of the page is built by a function that returns its components (`_sidebar`,
`_header`, `_chat_tab`, `_admin_tab`), in the order the page shows them; `_wire_events` then
ties them to App's handlers, which call the pipelines only. `ui/web/server.py` serves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar, cast

import gradio as gr

from ui.web import admin, dates_view, insights
from ui.web.admin_tab import AdminHandlers
from ui.web.approved_tab import (
    ApprovedHandlers,
    ApprovedView,
    build_approved_view,
    wire_approved_view,
)
from ui.web.audit_view import AuditView, build_audit_view, wire_audit_view
from ui.web.chat import ChatHandlers
from ui.web.handlers import Conversation
from ui.web.i18n import LANGS, lang_from_header, t
from ui.web.sources_view import (
    SourcesHandlers,
    SourcesView,
    build_sources_view,
    wire_sources_view,
)
from ui.wiring import Services

LANG_CHOICES = [("English", "en"), ("中文", "zh")]

C = TypeVar("C")


class App(ChatHandlers, AdminHandlers, ApprovedHandlers, SourcesHandlers):
    """The page's handlers: the chat tab's and the sidebar's (`ui/web/chat.py`) and the admin
    tab's (`ui/web/admin_tab.py`, its editor of approved answers `ui/web/approved_tab.py`, the
    folders kept in sync `ui/web/sources_view.py`), over one set of services and one question
    gate."""

    def on_load(self, request: gr.Request) -> tuple[Any, ...]:
        """The page as it opens: its language, who is signed in, the admin tab (admins only),
        the logout button (not in demo mode) and the groups an admin may give uploads."""
        lang = lang_from_header(request.headers.get("accept-language"))
        user = self.who(request)
        who = t("signed_in", lang, user=user.name, groups=", ".join(user.groups))
        # group names reach admins only, and only those they may give (none are in /config)
        choices = self.known_groups(user) if user.is_admin else []
        return (lang, who, gr.update(visible=user.is_admin), gr.update(visible=not self.demo),
                gr.update(choices=choices, value=[g for g in ("all",) if g in choices]))


class Labels:
    """The components whose words follow the page's language, each with the i18n keys of its
    attributes: `lab(gr.Button(t("send")), value="send")` relabels the button's value."""

    def __init__(self) -> None:
        self.keyed: list[tuple[Any, dict[str, str]]] = []

    def __call__(self, component: C, **keys: str) -> C:
        self.keyed.append((component, keys))
        return component

    @property
    def components(self) -> list[Any]:
        return [component for component, _ in self.keyed]

    def updates(self, lang: str) -> list[dict[str, Any]]:
        """Each component's words in `lang`, in the order of `components`."""
        return [{"__type__": "update", **{attr: t(key, lang) for attr, key in keys.items()}}
                for _component, keys in self.keyed]


@dataclass
class Sidebar:
    conversations: gr.Radio
    title: gr.Textbox
    rename: gr.Button
    forget: gr.Button
    message: gr.Markdown


@dataclass
class Header:
    title: gr.Markdown
    who: gr.Markdown
    lang: gr.Radio
    logout: gr.Button


@dataclass
class ChatTab:
    chatbot: gr.Chatbot
    question: gr.Textbox
    send: gr.Button
    new: gr.Button
    comment: gr.Textbox
    up: gr.Button
    down: gr.Button
    feedback_status: gr.Markdown
    pick: gr.Dropdown
    view: gr.Button
    source: gr.HTML


@dataclass
class Insights:
    box: gr.Accordion
    show: gr.Button
    figures: gr.JSON
    per_day: gr.BarPlot
    latency: gr.BarPlot
    cited: gr.Dataframe
    never: gr.Textbox
    gaps: gr.Dataframe
    gap_pick: gr.Dropdown
    gap_note: gr.Textbox
    save_note: gr.Button
    export: gr.DownloadButton

    @property
    def outputs(self) -> list[Any]:
        """What `App.insights` fills, in its order."""
        return [self.figures, self.per_day, self.latency, self.cited, self.never, self.gaps,
                self.gap_pick, self.export]


@dataclass
class AdminTab:
    tab: gr.Tab
    files: gr.File
    groups: gr.Dropdown
    dates: list[gr.Textbox]  # the upload's effective, review-by and expiry dates
    ingest: gr.Button
    report: gr.Dataframe
    docs: gr.Dataframe
    due: gr.Dataframe  # documents due for review or expiring (ui/web/dates_view.py)
    refresh: gr.Button
    doc_ref: gr.Textbox
    delete: gr.Button
    mode: gr.Radio
    reindex: gr.Button
    message: gr.Markdown
    stats: gr.JSON
    feedback: gr.Dataframe
    insights: Insights
    audit: AuditView
    approved: ApprovedView
    synced: SourcesView

    @property
    def tables(self) -> list[Any]:
        """What `App.admin_tables` fills, in its order."""
        return [self.docs, self.stats, self.feedback]


@dataclass
class Page:
    conv: gr.State
    sidebar: Sidebar
    header: Header
    chat: ChatTab
    admin: AdminTab


def build_app(services: Services, demo: bool | None = None) -> gr.Blocks:
    """The Blocks page over the process's services."""
    app = App(services, services.settings.ui.demo if demo is None else demo)
    lab = Labels()
    # Gradio's cache (uploads, outputs): files older than an hour go, checked every hour
    with gr.Blocks(title=t("title"), delete_cache=(3600, 3600)) as blocks:
        conv = gr.State(Conversation())
        sidebar = _sidebar(lab)
        header = _header(lab, app.demo)
        with gr.Tabs():
            chat = _chat_tab(lab)
            admin_tab = _admin_tab(lab)
        _wire_events(blocks, app, lab, Page(conv, sidebar, header, chat, admin_tab))
    blocks.kb_app = app
    return cast(gr.Blocks, blocks)


# --- the page's parts ------------------------------------------------------------------
def _sidebar(lab: Labels) -> Sidebar:
    """Stored conversations (issue 15): the user's, newest first; a click resumes one."""
    with gr.Sidebar(open=True, elem_id="kb-sidebar"):
        conversations = lab(gr.Radio(choices=[], label=t("conversations"),
                                     elem_id="kb-conversations"), label="conversations")
        title = lab(gr.Textbox(label=t("conversation_title"), lines=1,
                               elem_id="kb-conv-title"), label="conversation_title")
        with gr.Row():
            rename = lab(gr.Button(t("rename"), size="sm", elem_id="kb-rename"), value="rename")
            forget = lab(gr.Button(t("delete_conversation"), size="sm", variant="stop",
                                   elem_id="kb-forget"), value="delete_conversation")
        message = gr.Markdown(elem_id="kb-conv-msg")
        # what kb keeps about the signed-in person, as a JSON download (`GET /my-data`)
        lab(gr.Button(t("my_data"), link="/my-data", size="sm", elem_id="kb-my-data"),
            value="my_data")
    return Sidebar(conversations, title, rename, forget, message)


def _header(lab: Labels, demo: bool) -> Header:
    """The title, who is signed in, the language and the logout button (none in demo mode)."""
    with gr.Row(equal_height=True):
        title = gr.Markdown(f"## {t('title')}")
        who = gr.Markdown(elem_id="kb-who")
        lang = gr.Radio(LANG_CHOICES, value="en", label=t("language"), show_label=False,
                        container=False, elem_id="kb-lang", scale=0, min_width=180)
        logout = lab(gr.Button(t("logout"), link="/logout", size="sm", scale=0,
                               visible=not demo), value="logout")
    return Header(title, who, lang, logout)


def _chat_tab(lab: Labels) -> ChatTab:
    """The chat and its feedback on the left, the cited sources on the right."""
    with gr.Tab(t("chat_tab"), id="chat") as tab:
        lab(tab, label="chat_tab")
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
                with gr.Accordion(t("feedback"), open=False) as feedback_box:
                    lab(feedback_box, label="feedback")
                    comment = lab(gr.Textbox(label=t("comment"), lines=1), label="comment")
                    with gr.Row():
                        up = lab(gr.Button(t("thumbs_up"), size="sm"), value="thumbs_up")
                        down = lab(gr.Button(t("thumbs_down"), size="sm"), value="thumbs_down")
                    feedback_status = gr.Markdown()
            with gr.Column(scale=2):
                pick = lab(gr.Dropdown(choices=[], label=t("pick_source"),
                                       elem_id="kb-source-pick"), label="pick_source")
                view = lab(gr.Button(t("view_source"), elem_id="kb-view"), value="view_source")
                source = gr.HTML(elem_id="kb-source")
    return ChatTab(chatbot, question, send, new, comment, up, down, feedback_status, pick, view,
                   source)


def _admin_tab(lab: Labels) -> AdminTab:
    """Uploads with their groups and dates, the documents and those due for review or expiring,
    re-index, store status, feedback, the insights, the approved answers' editor, the audit
    trail and the folders kept in sync; hidden until `App.on_load` finds an admin."""
    with gr.Tab(t("admin_tab"), id="admin", visible=False) as tab:
        lab(tab, label="admin_tab")
        with gr.Row():
            files = lab(gr.File(label=t("upload"), file_count="multiple",
                                file_types=[".pdf", ".docx"]), label="upload")
            with gr.Column():
                groups = lab(gr.Dropdown(choices=[], value=[], multiselect=True,
                                         allow_custom_value=True, label=t("groups")),
                             label="groups")
                with gr.Row():
                    dates = [lab(gr.Textbox(label=t(f"date_{key}"), lines=1, max_lines=1,
                                            placeholder="2027-01-01"), label=f"date_{key}")
                             for key in ("effective", "review_by", "expires")]
                ingest = lab(gr.Button(t("ingest"), variant="primary"), value="ingest")
        report = lab(gr.Dataframe(headers=admin.REPORT_HEADERS, label=t("report"),
                                  interactive=False), label="report")
        docs = lab(gr.Dataframe(headers=admin.DOC_HEADERS, label=t("documents"),
                                interactive=False), label="documents")
        due = lab(gr.Dataframe(headers=dates_view.DUE_HEADERS, label=t("due_list"),
                               interactive=False, elem_id="kb-due"), label="due_list")
        with gr.Row():
            refresh = lab(gr.Button(t("refresh"), size="sm"), value="refresh")
            doc_ref = lab(gr.Textbox(label=t("delete_doc"), lines=1), label="delete_doc")
            delete = lab(gr.Button(t("delete"), variant="stop", size="sm"), value="delete")
            mode = lab(gr.Radio(["incremental", "full"], value="incremental",
                                label=t("reindex_mode")), label="reindex_mode")
            reindex = lab(gr.Button(t("reindex"), size="sm"), value="reindex")
        message = gr.Markdown()
        stats = lab(gr.JSON(label=t("stats")), label="stats")
        feedback = lab(gr.Dataframe(headers=admin.FEEDBACK_HEADERS, label=t("feedback_list"),
                                    interactive=False), label="feedback_list")
        seen = _insights(lab)
        approved = build_approved_view(lab)
        trail = build_audit_view(lab, t)
        synced = build_sources_view(lab, t)
    return AdminTab(tab, files, groups, dates, ingest, report, docs, due, refresh, doc_ref,
                    delete, mode, reindex, message, stats, feedback, seen, trail, approved,
                    synced)


def _insights(lab: Labels) -> Insights:
    """The admin's view of use, folded until opened: figures, plots, cited documents and the
    knowledge gaps with their notes."""
    with gr.Accordion(t("insights"), open=False) as box:
        lab(box, label="insights")
        show = lab(gr.Button(t("refresh"), size="sm"), value="refresh")
        figures = lab(gr.JSON(label=t("figures")), label="figures")
        with gr.Row():
            per_day = lab(gr.BarPlot(x="day", y="questions", color="language",
                                     label=t("per_day")), label="per_day")
            latency = lab(gr.BarPlot(x="stage", y="ms", color="percentile",
                                     label=t("latency")), label="latency")
        cited = lab(gr.Dataframe(headers=["document", "answers citing it"],
                                 label=t("most_cited"), interactive=False), label="most_cited")
        never = lab(gr.Textbox(label=t("never_cited"), interactive=False), label="never_cited")
        gaps = lab(gr.Dataframe(headers=list(insights.GAP_COLUMNS), label=t("gaps"),
                                interactive=False), label="gaps")
        with gr.Row():
            gap_pick = lab(gr.Dropdown(choices=[], label=t("gap")), label="gap")
            gap_note = lab(gr.Textbox(label=t("gap_note"), lines=1), label="gap_note")
            save_note = lab(gr.Button(t("save"), size="sm"), value="save")
        export = lab(gr.DownloadButton(t("export_csv"), size="sm"), label="export_csv")
    return Insights(box, show, figures, per_day, latency, cited, never, gaps, gap_pick, gap_note,
                    save_note, export)


# --- the events ------------------------------------------------------------------------
def _wire_events(blocks: gr.Blocks, app: App, lab: Labels, page: Page) -> None:
    """Tie the page's components to App's handlers; an event without an `api_name` is private
    to the page."""
    header, admin_tab = page.header, page.admin
    blocks.load(app.on_load, None,
                [header.lang, header.who, admin_tab.tab, header.logout, admin_tab.groups],
                api_visibility="private")
    _wire_language(app, lab, header)
    asked = _wire_chat(app, page)
    _wire_admin(app, admin_tab)
    _wire_sidebar(blocks, app, page, after=asked)


def _wire_language(app: App, lab: Labels, header: Header) -> None:
    """The language picker relabels the page, its title and who is signed in."""

    def relabel(code: str, request: gr.Request) -> list[Any]:
        code = code if code in LANGS else "en"
        user = app.who(request)
        return [*lab.updates(code), f"## {t('title', code)}",
                t("signed_in", code, user=user.name, groups=", ".join(user.groups))]

    header.lang.change(relabel, header.lang, [*lab.components, header.title, header.who],
                       api_visibility="private")


def _wire_chat(app: App, page: Page) -> list[Any]:
    """Questions, a new conversation, the source view and feedback; the events after which
    the sidebar is refreshed."""
    chat, conv, lang = page.chat, page.conv, page.header.lang
    ask_inputs = [chat.question, lang, conv]
    ask_outputs = [chat.chatbot, conv, chat.question, chat.pick]
    # no limit of Gradio's own: every question reaches app.ask at once, whose gate
    # (ui.queue_depth, shared with the API) admits it or says "busy, try again"
    asked = [chat.send.click(app.ask, ask_inputs, ask_outputs, api_name="ask",
                             concurrency_limit=None),
             chat.question.submit(app.ask, ask_inputs, ask_outputs, api_visibility="private",
                                  concurrency_limit=None)]
    started = chat.new.click(app.new_conversation, conv,
                             [chat.chatbot, conv, chat.question, chat.pick, chat.source,
                              chat.feedback_status], api_name="new_conversation")
    view_inputs = [chat.pick, lang, conv]
    chat.view.click(app.view_source, view_inputs, chat.source, api_name="view_source")
    chat.pick.input(app.view_source, view_inputs, chat.source, api_visibility="private")
    rate_inputs = [chat.comment, lang, conv]
    chat.up.click(app.thumbs_up, rate_inputs, chat.feedback_status, api_name="thumbs_up")
    chat.down.click(app.thumbs_down, rate_inputs, chat.feedback_status, api_name="thumbs_down")
    chat.chatbot.like(app.on_like, [lang, conv], chat.feedback_status, api_visibility="private")
    return [*asked, started]


def _wire_admin(app: App, tab: AdminTab) -> None:
    """Uploads, the tables (the due list beside them), delete, re-index, the insights with
    their gap notes, the audit trail, the editor of approved answers and the folders kept in
    sync."""
    tab.refresh.click(app.admin_tables, None, tab.tables, api_name="admin_tables")
    tab.refresh.click(app.due_list, None, tab.due, api_name="due_list")  # named before the
    # private listeners of the same handler, which would take its name
    tab.ingest.click(app.ingest_upload, [tab.files, tab.groups, *tab.dates],
                     [tab.report, tab.docs], api_name="ingest").then(
        app.due_list, None, tab.due, api_visibility="private")
    tab.tab.select(app.admin_tables, None, tab.tables, api_visibility="private")
    tab.tab.select(app.due_list, None, tab.due, api_visibility="private")
    tab.delete.click(app.delete, [tab.doc_ref], [tab.message, tab.docs], api_name="delete")
    tab.reindex.click(app.reindex, [tab.mode], [tab.report, tab.docs], api_name="reindex")
    seen = tab.insights
    seen.show.click(app.insights, None, seen.outputs, api_name="insights")
    seen.box.expand(app.insights, None, seen.outputs, api_visibility="private")
    seen.save_note.click(app.save_gap_note, [seen.gap_pick, seen.gap_note], seen.outputs,
                         api_name="gap_note")
    wire_audit_view(app.audit_trail, tab.audit)
    wire_approved_view(app, tab.approved)
    wire_sources_view(app.synced_sources, tab.synced)


def _wire_sidebar(blocks: gr.Blocks, app: App, page: Page, after: list[Any]) -> None:
    """Stored conversations (issue 15): listed on load and `after` each answer or new
    conversation; resumed, renamed and deleted from the sidebar."""
    side, chat, conv, lang = page.sidebar, page.chat, page.conv, page.header.lang
    listing = [side.conversations, side.title]
    blocks.load(app.sidebar, conv, listing, api_name="conversations")
    for event in after:
        event.then(app.sidebar, conv, listing, api_visibility="private")
    side.conversations.input(app.resume, [side.conversations, lang, conv],
                             [chat.chatbot, conv, chat.pick, chat.source, chat.feedback_status,
                              side.title], api_name="resume")
    side.rename.click(app.rename_conversation, [side.title, lang, conv],
                      [side.message, *listing], api_name="rename_conversation")
    side.forget.click(app.delete_conversation, [lang, conv],
                      [chat.chatbot, conv, chat.pick, side.message, *listing],
                      api_name="delete_conversation")
