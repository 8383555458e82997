"""Who asks on a platform, and who else reads the answer: a platform user becomes a kb user
through `[channels.<platform>.user_map]` (their platform id, else their e-mail, to a kb user
name), or through the directory (`channels.directory_filter`, e.g. "(mail={user})", with the
LDAP service account of `[auth]`); a kb record is then read as a session's would be (a
directory user's groups followed, `Users.follow`). Someone no kb user matches is unmapped:
`channels.unmapped` decides what they get (`auth.base_groups`, or a sign-in link).

In a group chat the answer may hold only passages every member may see
(`channels.group_chats = "members"`): the groups every member has, unmapped members counting
as the unmapped do; bots are not members. A chat of more than MAX_MEMBERS is answered from
`auth.base_groups` alone. What a platform says of a user is kept CACHE_S.

    identity = Identity(users, signin, settings.channels, settings.auth)
    await identity.user(slack, "U012")            -> User(name="alice", groups=("all", "hr"))
    await identity.audience(slack, "C034", alice) -> ("all",)   # bob, in "all" only, is there
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from fastapi.concurrency import run_in_threadpool

from core.errors import DirectoryUnavailable
from core.settings.auth import AuthSettings
from core.settings.channels import ChannelsSettings
from core.types import User
from ui.api.channels.base import Person, Platform, PlatformError
from ui.identity.signin import SignIn
from ui.identity.users import Users

logger = logging.getLogger(__name__)

CACHE_S = 60.0  # a platform user's kb user is looked up again after this
MAX_MEMBERS = 500  # a larger chat is answered from auth.base_groups alone
LOOKUPS_AT_ONCE = 8  # calls to a platform's API while reading a chat's members


class Identity:
    """Platform users to kb users (safe to share: the cache is per process)."""

    def __init__(self, users: Users, signin: SignIn | None, channels: ChannelsSettings,
                 auth: AuthSettings) -> None:
        self.users, self.signin, self.channels = users, signin, channels
        self.base = auth.base_groups
        self._cache: dict[tuple[str, str], tuple[float, bool, User | None]] = {}

    def user_map(self, platform: str) -> dict[str, str]:
        return dict(getattr(self.channels, platform).user_map)

    def unmapped(self, platform: str, user_id: str) -> User:
        """The user an unmapped asker asks as: named by the platform, the base groups."""
        return User(name=f"{platform}:{user_id}"[:64], groups=tuple(self.base))

    async def user(self, platform: Platform, user_id: str) -> User | None:
        """The kb user `user_id` of `platform` is, else None."""
        return (await self._lookup(platform, user_id))[1]

    async def audience(self, platform: Platform, chat: str, asker: User) -> tuple[str, ...]:
        """The groups every member of `chat` has (the asker among them)."""
        members = await platform.members(chat)
        if len(members) > MAX_MEMBERS:
            logger.info("%s chat %s has %d members: answered from auth.base_groups",
                        platform.name, chat, len(members))
            return shared_groups([asker.groups, self.base])
        gate = asyncio.Semaphore(LOOKUPS_AT_ONCE)

        async def groups_of(member: str) -> tuple[str, ...] | None:
            async with gate:
                bot, user = await self._lookup(platform, member)
            if bot:
                return None
            if user is None:
                return tuple(self.base) if self.channels.unmapped == "base" else ()
            return user.groups

        found = await asyncio.gather(*(groups_of(m) for m in members))
        return shared_groups([asker.groups, *(g for g in found if g is not None)])

    async def _lookup(self, platform: Platform, user_id: str) -> tuple[bool, User | None]:
        """(whether a bot, the kb user or None), from the cache when read within CACHE_S."""
        key = (platform.name, user_id)
        cached = self._cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < CACHE_S:
            return cached[1], cached[2]
        mapping = self.user_map(platform.name)
        name, person = mapping.get(user_id, ""), Person(user_id)
        if not name:
            try:
                person = await platform.person(user_id)
            except PlatformError as exc:
                logger.warning("%s user %s not read: %s", platform.name, user_id, exc)
            name = mapping.get(person.email, "") if person.email else ""
        user = None if person.bot else await run_in_threadpool(self._kb_user, name, person.email)
        self._cache[key] = (time.monotonic(), person.bot, user)
        logger.info("%s user %s is %s", platform.name, user_id,
                    "a bot" if person.bot else user.name if user else "unmapped")
        return person.bot, user

    def _kb_user(self, name: str, email: str) -> User | None:
        """The kb record of `name` (or of the directory's person with `email`), read as a
        session's is; None when there is none, it is disabled, or the directory refuses."""
        try:
            if name:
                user = self.users.get(name)
                if user is None:  # a directory user not signed in here yet
                    return self.signin.find(name) if self.signin else None
                source = self.users.source(name)
                if user.disabled or source is None:
                    return None
                return self.users.follow(user, source) if self.users.follow else user
            if email and self.channels.directory_filter and self.signin:
                return self.signin.find(email, self.channels.directory_filter)
        except DirectoryUnavailable as exc:
            logger.warning("directory look-up for a chat user failed: %s", exc)
        return None


def shared_groups(groups: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The groups all of `groups` have, in the first one's order.

        shared_groups([("all", "hr"), ("all",)]) -> ("all",)
    """
    if not groups:
        return ()
    common = set(groups[0]).intersection(*map(set, groups[1:]))
    return tuple(g for g in groups[0] if g in common)
