"""Issue 28, finding 3: request bodies. Deeply nested JSON made `POST /api/ask` answer 500, and
no body was capped (FastAPI and Gradio read a whole body into memory before checking a login).
Tried against the real app (uvicorn on loopback, the sample store, the model unreachable)."""

from __future__ import annotations

import json
import socket
import urllib.parse
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.ui.conftest import PASSWORDS
from tests.ui.test_trust import login
from ui.api import kb_api

NESTED = b"[" * 100_000
QUESTION = {"question": "How many days of annual leave can I carry over?"}


def test_parse_ask_says_in_one_line_what_is_wrong() -> None:
    assert kb_api.parse_ask(json.dumps(QUESTION).encode()).question == QUESTION["question"]
    for raw, said in [(NESTED, "nested too deeply"), (b'{"question": ' + NESTED, "too deeply"),
                      (b"\xff", "not JSON"), (b"", "not JSON"),
                      (b'{"question": "a", "history": [{"question": 1}]}',
                       "history.0.question: Input should be a valid string; "
                       "history.0.answer: Field required")]:
        with pytest.raises(ValueError, match="^[^\n]*$") as caught:
            kb_api.parse_ask(raw)
        assert said in str(caught.value)


def longest(model: Any, name: str) -> int:
    return int(next(m.max_length for m in model.model_fields[name].metadata
                    if hasattr(m, "max_length")))


def largest_question() -> bytes:
    """The largest body `POST /api/ask` takes: every field at its longest, every character a
    JSON escape pair (U+1F600, 12 bytes), and both history and a conversation id, which the
    route refuses (422) once it has parsed them."""
    smile = "\U0001f600"
    turn = {"question": smile * longest(kb_api.PastTurn, "question"),
            "answer": smile * longest(kb_api.PastTurn, "answer")}
    body = {"question": smile * longest(kb_api.AskRequest, "question"),
            "history": [turn] * longest(kb_api.AskRequest, "history"),
            "conversation_id": "c" * longest(kb_api.AskRequest, "conversation_id")}
    return json.dumps(body).encode()


def declared_only(url: str, path: str, length: int, headers: str = "") -> str:
    """Send a request that declares a `length`-byte body and send none of it; the reply's
    status line (the server must answer without waiting for the body)."""
    where = urllib.parse.urlsplit(url)
    with socket.create_connection((where.hostname, where.port), timeout=60) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {where.netloc}\r\n{headers}"
                     "Content-Type: application/json\r\n"
                     f"Content-Length: {length}\r\n\r\n".encode())
        return sock.makefile("rb").readline().decode().strip()


def pieces(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    """`total` bytes in pieces: httpx sends them chunked, with no Content-Length."""
    for start in range(0, total, size):
        yield b" " * min(size, total - start)


@pytest.mark.slow
def test_nested_json_gets_422_in_one_line(login_server: Any) -> None:
    """Finding 3: 100,000 nested `[` raised RecursionError in `POST /api/ask`: 500."""
    url = login_server.url
    bearer = {"Authorization": f"Bearer {login_server.tokens['bob']}",
              "Content-Type": "application/json"}
    with httpx.Client(base_url=url, timeout=120, headers=bearer) as client:
        for body in (NESTED, b'{"question": ' + NESTED, b'{"question": "a", "history": ' + NESTED):
            reply = client.post("api/ask", content=body)
            assert reply.status_code == 422, reply.text
            error = reply.json()["error"]
            assert "nested too deeply" in error and "\n" not in error, error
        # Gradio's routes: the guard asks for a login first, then parses the body itself to
        # check its session hash: refused as well, never a 500
        json_type = {"Content-Type": "application/json"}
        anonymous = httpx.post(url + "gradio_api/queue/join", content=NESTED, timeout=60,
                               headers=json_type)
        assert anonymous.status_code == 401, anonymous.text
        page = login(url, "bob", PASSWORDS["bob"])
        joined = page.post("gradio_api/queue/join", content=NESTED, headers=json_type)
        page.close()
        assert joined.status_code == 400, joined.text
        # and the server answers a question right after
        assert client.post("api/ask", json=QUESTION).status_code == 200


@pytest.mark.slow
def test_oversized_bodies_get_413_and_the_server_stays_responsive(login_server: Any) -> None:
    """Finding 3: no body cap: a 200 MB body to /api/ask took the server from 647 MB to
    1.46 GB. Now a declared Content-Length over `ui.max_body_bytes` is answered 413 before any
    of it is sent, and a chunked body is cut at the cap; admin uploads keep their own limit."""
    url, cap = login_server.url, login_server.settings.ui.max_body_bytes
    token = login_server.tokens["bob"]
    auth = f"Authorization: Bearer {token}\r\n"
    big = 200 * 1024 * 1024
    assert declared_only(url, "/api/ask", big, auth).startswith("HTTP/1.1 413")
    assert declared_only(url, "/login", big).startswith("HTTP/1.1 413")  # no login needed
    # Gradio's routes answer before any of the body is read: the guard asks for a login first,
    # and refuses the routes the app does not use (ui/identity/guard.py)
    assert declared_only(url, "/gradio_api/queue/join", big).startswith("HTTP/1.1 401")
    assert declared_only(url, "/gradio_api/run/ask", big).startswith("HTTP/1.1 404")
    assert declared_only(url, "/api/ask", cap + 1, auth).startswith("HTTP/1.1 413")

    with httpx.Client(base_url=url, timeout=120,
                      headers={"Authorization": f"Bearer {token}"}) as client:
        streamed = client.post("api/ask", content=pieces(cap + 1024 * 1024),
                            headers={"Content-Type": "application/json"})
        assert streamed.status_code == 413, streamed.text
        error = streamed.json()["error"]
        assert "ui.max_body_bytes" in error and "\n" not in error, error
        # a signed-in page's queue/join body is read by the guard, which stops at its own cap
        page = login(url, "bob", PASSWORDS["bob"])
        joined = page.post("gradio_api/queue/join", content=pieces(cap + 1024 * 1024),
                           headers={"Content-Type": "application/json"}, timeout=120)
        page.close()
        assert joined.status_code == 413, joined.text
        # the cap holds the largest question the API takes: it is read, parsed and judged
        largest = largest_question()
        assert len(largest) <= cap
        judged = client.post("api/ask", content=largest, headers={"Content-Type":
                                                                "application/json"})
        assert judged.status_code == 422 and "either history or" in judged.text, judged.text
        # the server answers at once after all that
        assert client.post("api/ask", json=QUESTION).status_code == 200
    # an admin's upload past the cap is Gradio's to judge (ui.upload_max_mb per file)
    alice = login(url, "alice", PASSWORDS["alice"])
    upload = {"files": ("big.txt", b"x" * (cap + 1024 * 1024), "text/plain")}
    uploaded = alice.post("gradio_api/upload", files=upload)
    assert uploaded.status_code == 200, uploaded.text
