"""What every handler of the page stands on: the process's services, the question gate it
shares with the API, who is asking, and the browser session's conversation.

    user = self.who(request)        # the signed-in user (gr.Error if none), or the demo user
    user = self.admin(request)      # the same, refused unless an admin
    owned = self.mine(conv, user)   # the session's Conversation if `user` owns it, else None

Who is asking comes from the login (Gradio's session cookie -> `gr.Request.username`, checked by
`ui/identity/login.py`: expiry, disabled users, password changes) or, in demo mode, is the demo
user; the user's groups are read from the ledger on every request and drive every question, source
view, page image, section view and file. Nothing the browser sends names a group. A conversation
belongs to the user who started it: another user who sends its session id gets none of it, and
Gradio's routes refuse them that session (`ui/identity/guard.py`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from core.errors import ConfigError
from core.types import Turn, User
from ui.gate import Gate
from ui.i18n import t
from ui.wiring import Services

logger = logging.getLogger(__name__)

DEMO_USER = User("demo", ("all",), is_admin=False)


class UserError(gr.Error):
    """A person's mistake or a refusal, said to them in the page in one line; the console gets
    one INFO line, not the traceback Gradio prints for its errors."""

    def __init__(self, message: str) -> None:
        super().__init__(message, print_exception=False)
        logger.info("told the user: %s", message)


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


class Handlers:
    """The services and checks the page's handlers share; each handler finds the user first
    and checks what it must (`ui/page/chat.py`, `ui/admin/documents.py`)."""

    def __init__(self, services: Services, demo: bool) -> None:
        self.settings = services.settings
        self.store = services.store
        self.assistant = services.assistant
        self.users = services.users
        self.audit = services.users.audit
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

    def who(self, request: gr.Request | None) -> User:
        if self.demo:
            return DEMO_USER
        name = getattr(request, "username", None) if request is not None else None
        user = self.users.get(name) if name else None
        if user is None:
            raise UserError(t("not_signed_in"))
        return user

    @staticmethod
    def address(request: gr.Request | None) -> str:
        """The client's address (a trusted proxy's client: GuardGradio wrote it in)."""
        client = getattr(request, "client", None)
        return str(getattr(client, "host", "") or "?")

    def admin(self, request: gr.Request | None) -> User:
        user = self.who(request)
        if not user.is_admin:
            logger.warning("admin action refused for %s", user.name)
            raise UserError(t("admin_only"))
        return user

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
