"""A stand-in for the model server that records every chat request kb sends it: OpenAI's
`GET /v1/models` and `POST /v1/chat/completions` (plain or streamed) on loopback, answering
each question with the longest line of each of its passages, cited, so the answer holds the
passages' words as a real model's would. For tests of what kb puts into a prompt (the model's
own skill is not what they test).

    with RecordingModel("ernie-4.5-0.3b") as model:   # model.url: http://127.0.0.1:PORT/v1
        ...                                           # kb asks it
        model.prompts()                               # each request's messages, joined
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

_PASSAGE = re.compile(r"^\[(\d+)\] [^\n]*\n(.+)", re.DOTALL | re.MULTILINE)


def reply_to(messages: list[dict[str, Any]]) -> str:
    """The stand-in's answer: the longest line of each passage of the last message, cited.

    reply_to([{"role": "user", "content": "Passages:\\n[1] a.pdf p.2\\nLeave\\nAt most 5 days."}])
        -> "At most 5 days. [1]"
    """
    content = str(messages[-1].get("content", "")) if messages else ""
    said = []
    for block in content.split("\n\n"):
        found = _PASSAGE.search(block)
        if found:
            line = max(found.group(2).splitlines(), key=len).strip()[:200]
            said.append(f"{line} [{found.group(1)}]")
    return "\n".join(said) or "The documents do not cover it."


class RecordingModel:
    """The stand-in, serving on a free loopback port from `__enter__` to `__exit__`."""

    def __init__(self, served_name: str, max_model_len: int = 4096) -> None:
        self.served_name, self.max_model_len = served_name, max_model_len
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def prompts(self) -> list[str]:
        """Every chat request's messages so far, each request's joined into one text."""
        with self._lock:
            return ["\n".join(str(m.get("content", "")) for m in r.get("messages", []))
                    for r in self.requests]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def _record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                self._json({"object": "list", "data": [
                    {"id": model.served_name, "max_model_len": model.max_model_len}]})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model._record(body)
                text = reply_to(body.get("messages", []))
                usage = {"prompt_tokens": 0, "completion_tokens": 0}
                if not body.get("stream"):
                    self._json({"choices": [{"message": {"role": "assistant", "content": text},
                                             "finish_reason": "stop"}], "usage": usage})
                    return
                events = [{"choices": [{"delta": {"content": text}, "finish_reason": None}]},
                          {"choices": [{"delta": {}, "finish_reason": "stop"}]},
                          {"choices": [], "usage": usage}]
                sent = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                self._send(sent.encode(), "text/event-stream")

            def _json(self, data: dict[str, Any]) -> None:
                self._send(json.dumps(data).encode(), "application/json")

            def _send(self, data: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> RecordingModel:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
