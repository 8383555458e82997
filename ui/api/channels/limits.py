"""How many questions one person, and one chat, may ask a minute (`channels.user_per_minute`,
`channels.chat_per_minute`): a sliding window of the last minute's questions per key, in this
process (several app processes each allow as many).

    limits = RateLimits(per_user=2, per_chat=30)
    limits.allow("slack:U1", "slack:C1", now=0.0) -> True
    limits.allow("slack:U1", "slack:C1", now=1.0) -> True
    limits.allow("slack:U1", "slack:C1", now=2.0) -> False   # U1's third in a minute
"""

from __future__ import annotations

import threading
import time
from collections import deque

WINDOW_S = 60.0


class RateLimits:
    """Questions per person and per chat in the last WINDOW_S (thread-safe)."""

    def __init__(self, per_user: int, per_chat: int) -> None:
        self.per_user, self.per_chat = per_user, per_chat
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, user: str, chat: str, now: float | None = None) -> bool:
        """Whether one more question of `user` in `chat` is allowed now (then it counts); a
        refused one does not count."""
        now = time.monotonic() if now is None else now
        with self._lock:
            users, chats = self._recent(user, now), self._recent(chat, now)
            if len(users) >= self.per_user or len(chats) >= self.per_chat:
                return False
            users.append(now)
            chats.append(now)
            return True

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self._seen.setdefault(key, deque())
        while times and now - times[0] >= WINDOW_S:
            times.popleft()
        if not times and len(self._seen) > 10_000:  # forget idle keys now and then
            self._seen = {k: v for k, v in self._seen.items() if v}
            self._seen[key] = times
        return times
