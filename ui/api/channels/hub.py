"""The way of a chat message, the same for every platform: the callback route
(`/channels/<platform>/events`) checks it the platform's way and acknowledges it at once; each
event is then handled as a task of the event loop, once (its id kept in the ledger: a
platform's retry is dropped, by this process or another sharing the ledger):

    question  -> rate limits -> who asks (ui/api/channels/identity.py) -> the groups of the chat's
                 audience -> the thread's earlier turns -> a place at the gate the page and the
                 APIs share -> the Assistant (approved answers first) -> recorded, audited ->
                 the platform's card, in the thread
    feedback  -> the answer posted as that message -> the asker's rating of their question

Every question, answer and refusal is in the audit trail (`channel.question`, its outcome
answered, abstained or refused with the reason), as is every refused callback
(`channel.refused`).

    channels = open_channels(services, asking)     # None when no platform is enabled
    server.include_router(channels.router())
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Coroutine
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from core.errors import ConfigError, KbError
from core.settings.channels import GROUP_CHATS, SECRETS, UNMAPPED
from core.text import detect_lang
from core.types import Turn, User
from ui.api.asking import Asking
from ui.api.channels.base import Callback, Inbound, Platform, PlatformError, Refused, Reply
from ui.api.channels.dingtalk import Dingtalk
from ui.api.channels.feishu import Feishu
from ui.api.channels.identity import Identity
from ui.api.channels.limits import RateLimits
from ui.api.channels.reply import notice, reply_for
from ui.api.channels.slack import Slack
from ui.api.channels.teams import Teams
from ui.api.channels.wecom import Wecom
from ui.identity.login import client_address
from ui.wiring import Services

logger = logging.getLogger(__name__)

# The platforms kb answers in: a new one is a module with a Platform and one line here.
PLATFORMS: dict[str, type[Platform]] = {"slack": Slack, "feishu": Feishu, "wecom": Wecom,
                                         "dingtalk": Dingtalk, "teams": Teams}
HISTORY_TURNS = 10  # a thread's last turns read back (the assistant keeps answer.history_turns)


def open_channels(services: Services, asking: Asking,
                  environ: dict[str, str] | None = None) -> Channels | None:
    """The enabled platforms, their secrets from the environment; None when none is enabled.
    ConfigError naming the key or variable that is missing or wrong."""
    settings = services.settings
    channels, env = settings.channels, os.environ if environ is None else environ
    if channels.unmapped not in UNMAPPED:
        raise ConfigError(f"channels.unmapped {channels.unmapped!r}: use one of "
                          f"{', '.join(UNMAPPED)}")
    if channels.group_chats not in GROUP_CHATS:
        raise ConfigError(f"channels.group_chats {channels.group_chats!r}: use one of "
                          f"{', '.join(GROUP_CHATS)}")
    if channels.unmapped == "sign-in" and not settings.ui.public_url:
        raise ConfigError('channels.unmapped = "sign-in" links to the page: set ui.public_url')
    platforms = [cls.open(channels, {k: env.get(k, "") for k in SECRETS[name]})
                 for name, cls in PLATFORMS.items() if getattr(channels, name).enabled]
    if not platforms:
        return None
    identity = Identity(services.users, services.signin, channels, settings.auth)
    return Channels(platforms, asking, identity, settings.ui.public_url)


class Channels:
    """The enabled platforms' routes and the shared handling of their events."""

    def __init__(self, platforms: list[Platform], asking: Asking, identity: Identity,
                 public_url: str) -> None:
        self.platforms, self.asking, self.identity = platforms, asking, identity
        self.users = asking.users
        self.ledger, self.audit = self.users.ledger, self.users.audit
        self.settings, self.public_url = identity.channels, public_url
        self.limits = RateLimits(self.settings.user_per_minute, self.settings.chat_per_minute)
        self._tasks: set[asyncio.Task[None]] = set()

    def router(self) -> APIRouter:
        """`GET` and `POST /channels/<platform>/events` for each enabled platform."""
        router = APIRouter()
        for platform in self.platforms:
            router.add_api_route(f"/channels/{platform.name}/events", self._route(platform),
                                 methods=["GET", "POST"], include_in_schema=False)
        return router

    def _route(self, platform: Platform) -> Any:
        async def route(request: Request) -> Response:
            return await self.callback(platform, request)

        return route

    async def callback(self, platform: Platform, request: Request) -> Response:
        """The platform's checks, each new event started, and the platform's answer at once."""
        call = Callback(request.method, dict(request.query_params),
                        {k.lower(): v for k, v in request.headers.items()}, await request.body())
        try:
            await platform.prepare(call)
            received = platform.receive(call)
        except Refused as exc:
            address = client_address.get()
            logger.warning("%s callback from %s refused (%s): %s", platform.name, address,
                           exc.reason, exc)
            self.audit.soon("channel.refused", platform.name, object=request.url.path,
                            outcome="refused", address=address, reason=exc.reason)
            return JSONResponse({"error": f"refused: {exc.reason}"}, status_code=401)
        for event in received.events:  # after the answer: nothing here waits for the ledger
            self._start(self.handle(platform, event))
        return Response(received.body, received.status, media_type=received.media_type)

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._tasks.discard)

    async def handle(self, platform: Platform, event: Inbound) -> None:
        """A question answered or a rating kept, the first time its event id comes; a
        failure logged, never raised."""
        try:
            if not await run_in_threadpool(self.ledger.channel_event_first, platform.name,
                                           event.event_id):
                logger.info("%s event %s seen before: dropped", platform.name, event.event_id)
            elif event.rating:
                await self.feedback(platform, event)
            else:
                await self.question(platform, event)
        except Exception:  # a task of its own: nobody else would see it
            logger.exception("%s event %s failed", platform.name, event.event_id)

    async def question(self, platform: Platform, event: Inbound) -> None:
        lang = detect_lang(event.text) if event.text else "en"
        name = platform.name
        if not event.text:
            await self._say(platform, event, notice("empty", lang))
            return
        asker = await self.identity.user(platform, event.user)
        if asker is None and self.settings.unmapped == "sign-in":
            await self._refuse(platform, event, self.identity.unmapped(name, event.user).name,
                               "unmapped", notice("sign_in", lang, url=self.public_url))
            return
        asker = asker or self.identity.unmapped(name, event.user)
        if not self.limits.allow(f"user:{name}:{event.user}", f"chat:{name}:{event.chat}"):
            await self._refuse(platform, event, asker.name, "rate", notice("slow_down", lang))
            return
        try:
            reader = await self._reader(platform, event, asker)
        except PlatformError as exc:  # who is in the chat is unknown: no answer
            logger.warning("%s chat %s: members not read: %s", name, event.chat, exc)
            await self._refuse(platform, event, asker.name, "members", notice("failed", lang))
            return
        history = await run_in_threadpool(self._history, platform, event)
        if not self.asking.admit(reader, via=name):
            await self._refuse(platform, event, asker.name, "busy", notice("busy", lang))
            return
        try:
            answer = await self.asking.ask(event.text, reader, history, via=name)
        except KbError as exc:
            logger.warning("%s question of %s failed: %s", name, asker.name, exc)
            await self._refuse(platform, event, asker.name, "failed", notice("failed", lang))
            return
        message = await platform.post(event, reply_for(answer, lang, self.public_url))
        await run_in_threadpool(self.ledger.add_channel_message, name, event.chat, event.thread,
                                message, answer.question_id, asker.name, event.text,
                                answer.answer)
        self.audit.soon("channel.question", asker.name, object=f"{name}:{event.chat}"[:200],
                        outcome="abstained" if answer.abstained else "answered",
                        platform=name, question_id=answer.question_id, group=event.group,
                        groups=list(reader.groups))

    async def _reader(self, platform: Platform, event: Inbound, asker: User) -> User:
        """Who the answer is for: the asker, or in a group chat (`group_chats = "members"`)
        the asker with the groups every member has."""
        if not event.group or self.settings.group_chats != "members":
            return asker
        groups = await self.identity.audience(platform, event.chat, asker)
        return dataclasses.replace(asker, groups=groups)

    def _history(self, platform: Platform, event: Inbound) -> list[Turn]:
        """The thread's earlier turns, as many as `answer.history_turns` asks (more are cut)."""
        since = time.time() - platform.history_s
        turns = self.ledger.channel_turns(platform.name, event.chat, event.thread, since,
                                          HISTORY_TURNS)
        return [Turn(q, a) for q, a in turns]

    async def feedback(self, platform: Platform, event: Inbound) -> None:
        """A 👍/👎 on an answer kb posted, kept as its asker's rating (another's is ignored)."""
        found = await run_in_threadpool(self.ledger.channel_question, platform.name,
                                        event.target)
        if found is None:
            logger.info("%s rating of a message kb did not post: ignored", platform.name)
            return
        question_id, asker = found
        user = await self.identity.user(platform, event.user)
        name = user.name if user else self.identity.unmapped(platform.name, event.user).name
        if name != asker:
            logger.info("%s rating of %s on %s's answer: ignored", platform.name, name, asker)
            return
        await run_in_threadpool(self.users.record_feedback, question_id, name, event.rating)
        logger.info("%s feedback %+d of %s on question %d", platform.name, event.rating, name,
                    question_id)

    async def _refuse(self, platform: Platform, event: Inbound, asker: str, reason: str,
                      text: str) -> None:
        """A question not answered: audited with the reason, and the asker told why."""
        logger.info("%s question of %s refused: %s", platform.name, asker, reason)
        self.audit.soon("channel.question", asker, object=f"{platform.name}:{event.chat}"[:200],
                        outcome="refused", platform=platform.name, reason=reason)
        await self._say(platform, event, text)

    async def _say(self, platform: Platform, event: Inbound, text: str) -> None:
        try:
            await platform.post(event, Reply(text, detect_lang(text)))
        except PlatformError as exc:
            logger.warning("%s notice not posted: %s", platform.name, exc)
