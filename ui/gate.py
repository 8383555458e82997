"""How many questions a process takes on at once: the app and the API share one `Gate` of
`ui.queue_depth` places. A question holds a place from the moment it is accepted (waiting for
retrieval, for a thread or for the model server) until its answer is finished; one more is
refused at once ("busy, try again"; the API answers 503 with Retry-After) instead of waiting
behind the others, and counted in /metrics (`kb_busy_total`).

    gate = Gate(depth=64)
    if not gate.enter():
        ...  # busy: refuse now
    try:
        ...  # answer
    finally:
        gate.leave()
"""

from __future__ import annotations

import threading


class Gate:
    """At most `depth` questions admitted at once (thread-safe; `depth` 0 admits none)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self._admitted = 0
        self._lock = threading.Lock()

    @property
    def admitted(self) -> int:
        with self._lock:
            return self._admitted

    def enter(self) -> bool:
        """Take a place; False (and nothing taken) when all `depth` are taken."""
        with self._lock:
            if self._admitted >= self.depth:
                return False
            self._admitted += 1
            return True

    def leave(self) -> None:
        """Give back a place taken by `enter()`."""
        with self._lock:
            self._admitted = max(0, self._admitted - 1)
