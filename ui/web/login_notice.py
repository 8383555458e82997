"""One line on the sign-in page for what Gradio's form leaves unsaid: its form shows a line
for a 400 alone ("incorrect credentials") and stays silent on any other answer, so a locked name
(429) or a directory that is down (503) looked like a button that does nothing. The page's HTML
gets a small script that shows the answer's `detail` under the form's title.

Gradio's `head` setting does not reach the sign-in page (its config is sent after the login),
so the script goes into the HTML of the page itself, as it leaves Gradio.

    app.add_middleware(LoginNotice)   # GET / answers with the script before </head>
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCRIPT = rb"""<script>
(() => {
  const fetch0 = window.fetch;
  window.fetch = async (input, init) => {
    const reply = await fetch0(input, init);
    const url = typeof input === "string" ? input : (input && input.url) || "";
    if (init && init.method === "POST" && /\/login\/?$/.test(url)
        && reply.status !== 200 && reply.status !== 400) {
      let line = "Sign-in failed (" + reply.status + ").";
      try {
        const body = await reply.clone().json();
        if (typeof body.detail === "string") line = body.detail;
      } catch (e) {}
      let note = document.getElementById("kb-login-note");
      if (!note) {
        note = document.createElement("p");
        note.id = "kb-login-note";
        note.setAttribute("role", "alert");
        note.style.color = "#b91c1c";
        const title = document.querySelector("h2");
        (title ? title.parentElement : document.body).insertBefore(
          note, title ? title.nextSibling : null);
      }
      note.textContent = line;
    }
    return reply;
  };
})();
</script>"""


class LoginNotice:
    """ASGI middleware: the script added to the HTML pages the app serves."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or \
                scope.get("path", "") not in ("", "/"):
            return await self.app(scope, receive, send)
        start: Message | None = None
        chunks: list[bytes] = []

        async def hold(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                return await send(message)
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            await send_page(start, b"".join(chunks))

        async def send_page(head: Message, body: bytes) -> None:
            headers = [(k, v) for k, v in head.get("headers", [])]
            html = any(k == b"content-type" and v.startswith(b"text/html") for k, v in headers)
            if html and b"</head>" in body:
                body = body.replace(b"</head>", SCRIPT + b"</head>", 1)
                headers = [(k, str(len(body)).encode()) if k == b"content-length" else (k, v)
                           for k, v in headers]
            await send(dict(head, headers=headers))
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, hold)
