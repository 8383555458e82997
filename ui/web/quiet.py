"""The console of `kb serve` kept for people: stopped with Ctrl+C while browser tabs hold
Gradio's event streams open, uvicorn waits `timeout_graceful_shutdown` seconds, then cancels
them; each cancelled stream would print a traceback ("Exception in ASGI application …
CancelledError"). `QuietStop` drops those records and says once how many streams were closed.

    logging.getLogger("uvicorn.error").addFilter(QuietStop())
"""

from __future__ import annotations

import asyncio
import logging


class QuietStop(logging.Filter):
    """Drops uvicorn's tracebacks of requests cancelled by a stop, and words its line on
    cancelling them for people."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
            return False
        if record.getMessage().startswith("Cancel ") and "graceful shutdown" in record.msg:
            record.msg, record.args = "stopping: closed %s open connection(s)", record.args
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def quiet_stop() -> None:
    """`QuietStop` on uvicorn's error log (once)."""
    log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietStop) for f in log.filters):
        log.addFilter(QuietStop())
