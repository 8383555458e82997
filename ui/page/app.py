"""The page: a Gradio Blocks page for employees (chat with cited answers, and the sidebar of
their stored conversations) and admins (documents, uploads, re-index, insights), and `App`,
the one object whose handlers answer it.

    blocks = build_app(services)     # the page; its App is blocks.kb_app
    blocks.kb_app.view_source(chunk_id, "en", None, request)

Each part of the page is built by a function that returns its components (`_sidebar`,
`_header`, `_chat_tab`, and the admin tab's `build_admin_tab` in ui/admin/tab.py), in the order
the page shows them; `_wire_events` then ties them to App's handlers, which call the pipelines
only. `ui/web/server.py` serves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import gradio as gr

from ui.admin.tab import AdminTab, AdminTabHandlers, build_admin_tab, wire_admin_tab
from ui.handlers import Conversation
from ui.i18n import LANGS, Labels, lang_from_header, t
from ui.page.chat import ChatHandlers
from ui.page.welcome import WelcomeHandlers
from ui.wiring import Services

LANG_CHOICES = [("English", "en"), ("中文", "zh")]
# The sidebar opens by default; on a screen narrower than this it would cover the chat.
CLOSE_SIDEBAR_ON_PHONES = """() => {
  const side = document.querySelector('#kb-sidebar');
  if (window.innerWidth < 768 && side && side.classList.contains('open')) {
    side.querySelector('.toggle-button')?.click();
  }
}"""


class App(ChatHandlers, WelcomeHandlers, AdminTabHandlers):
    """The page's handlers: the chat tab's and the sidebar's (`ui/page/chat.py`), the empty
    chat's welcome (`ui/page/welcome.py`) and the admin tab's (`ui/admin/tab.py`: documents,
    approved answers, folders kept in sync), over one set of services and one question gate."""

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


@dataclass
class Sidebar:
    conversations: gr.Radio
    title: gr.Textbox
    rename: gr.Button
    forget: gr.Button
    confirm: gr.Group  # "delete for good?", shown by `forget`
    sure: gr.Button
    keep: gr.Button
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
            admin_tab = build_admin_tab(lab)
        _wire_events(blocks, app, lab, Page(conv, sidebar, header, chat, admin_tab))
    blocks.kb_app = app
    return cast(gr.Blocks, blocks)


# --- the page's parts ------------------------------------------------------------------
def _sidebar(lab: Labels) -> Sidebar:
    """Stored conversations: the user's, newest first; a click resumes one."""
    with gr.Sidebar(open=True, elem_id="kb-sidebar"):  # closed on load on a narrow screen
        conversations = lab(gr.Radio(choices=[], label=t("conversations"),
                                     elem_id="kb-conversations"), label="conversations")
        title = lab(gr.Textbox(label=t("conversation_title"), lines=1,
                               elem_id="kb-conv-title"), label="conversation_title")
        with gr.Row():
            rename = lab(gr.Button(t("rename"), size="sm", elem_id="kb-rename"), value="rename")
            forget = lab(gr.Button(t("delete_conversation"), size="sm", variant="stop",
                                   elem_id="kb-forget"), value="delete_conversation")
        with gr.Group(visible=False, elem_id="kb-confirm") as confirm:
            lab(gr.Markdown(t("delete_sure")), value="delete_sure")
            with gr.Row():
                sure = lab(gr.Button(t("delete_yes"), size="sm", variant="stop",
                                     elem_id="kb-forget-sure"), value="delete_yes")
                keep = lab(gr.Button(t("delete_no"), size="sm", elem_id="kb-forget-keep"),
                           value="delete_no")
        message = gr.Markdown(elem_id="kb-conv-msg")
    return Sidebar(conversations, title, rename, forget, confirm, sure, keep, message)


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


# --- the events ------------------------------------------------------------------------
def _wire_events(blocks: gr.Blocks, app: App, lab: Labels, page: Page) -> None:
    """Tie the page's components to App's handlers; an event without an `api_name` is private
    to the page."""
    header, admin_tab = page.header, page.admin
    blocks.load(None, None, None, js=CLOSE_SIDEBAR_ON_PHONES)
    blocks.load(app.on_load, None,
                [header.lang, header.who, admin_tab.tab, header.logout, admin_tab.groups],
                api_visibility="private").then(
        app.welcome, header.lang, page.chat.chatbot, api_visibility="private")
    _wire_language(app, lab, header, page.chat.chatbot)
    asked = _wire_chat(app, page)
    wire_admin_tab(app, admin_tab)
    _wire_sidebar(blocks, app, page, after=asked)


def _wire_language(app: App, lab: Labels, header: Header, chatbot: gr.Chatbot) -> None:
    """The language picker relabels the page, its title, who is signed in and the welcome."""

    def relabel(code: str, request: gr.Request) -> list[Any]:
        code = code if code in LANGS else "en"
        user = app.who(request)
        return [*lab.updates(code), f"## {t('title', code)}",
                t("signed_in", code, user=user.name, groups=", ".join(user.groups))]

    header.lang.change(relabel, header.lang, [*lab.components, header.title, header.who],
                       api_visibility="private").then(
        app.welcome, header.lang, chatbot, api_visibility="private")


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
    chat.chatbot.example_select(_example_text, None, chat.question,
                                api_visibility="private").then(
        app.ask, ask_inputs, ask_outputs, api_visibility="private", concurrency_limit=None)
    started = chat.new.click(app.new_conversation, conv,
                             [chat.chatbot, conv, chat.question, chat.pick, chat.source,
                              chat.feedback_status], api_name="new_conversation")
    view_inputs = [chat.pick, lang, conv]
    chat.view.click(app.view_source, view_inputs, chat.source, api_name="view_source")
    chat.pick.input(app.view_source, view_inputs, chat.source, api_visibility="private")
    rate_inputs = [chat.comment, lang, conv]
    chat.up.click(app.thumbs_up, rate_inputs, chat.feedback_status, api_name="thumbs_up")
    chat.down.click(app.thumbs_down, rate_inputs, chat.feedback_status, api_name="thumbs_down")
    return [*asked, started]


def _example_text(data: gr.SelectData) -> str:
    """The example question clicked in the empty chat, into the question box."""
    value = data.value
    return str(value.get("text", "")) if isinstance(value, dict) else str(value or "")


def _wire_sidebar(blocks: gr.Blocks, app: App, page: Page, after: list[Any]) -> None:
    """Stored conversations: listed on load and `after` each answer or new
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
    # deleting asks first: the button shows "delete for good?" with Delete and Keep it
    side.forget.click(lambda: gr.update(visible=True), None, side.confirm,
                      api_visibility="private")
    side.keep.click(lambda: gr.update(visible=False), None, side.confirm,
                    api_visibility="private")
    side.sure.click(app.delete_conversation, [lang, conv],
                    [chat.chatbot, conv, chat.pick, side.message, *listing],
                    api_name="delete_conversation").then(
        lambda: gr.update(visible=False), None, side.confirm, api_visibility="private")
