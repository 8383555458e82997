"""What the OpenAI-compatible endpoint costs over `POST /api/ask`: the same question asked
through both, in turn, of one `kb serve` process on loopback, for a few hundred rounds.

The app serves a copy of the sample store (bench/common.py's, copied so the bench's user and its
records stay out of it) with the model server unreachable (connection refused at once): every
answer is retrieval-only, so what is compared is the endpoints' own work (token check, body,
gate, answering thread, record, the reply's JSON), not the model's time. Each round asks one
question four ways, in a shuffled order (seeded): `POST /api/ask` and
`POST /v1/chat/completions`, plain and streamed (`"stream": true`, timed to the end of the
stream). Times are the client's, from sending the request to having read the whole reply, with
one keep-alive connection (httpx), the client in this process and the app in its own; they start
after a warm-up (bench/serving/in_turn.py: the app's first questions wait for its question
encoder to load).

Not the same work either way: `/api/ask` also keeps each answer in a new conversation of the
user's (two more ledger writes), which `/v1` leaves to its client; its reply also carries the
passages. Both record the question.

    .venv/bin/python -m bench.serving.openai_overhead                # 300 rounds
    .venv/bin/python -m bench.serving.openai_overhead --rounds 100
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import httpx

from bench.common import questions
from bench.serving.in_turn import ask_in_turn, compare, served_sample

GOAL_MS = 5.0  # issue 25: the OpenAI endpoint adds at most this much at p95 over /api/ask
VARIANTS = ("api", "openai", "api_stream", "openai_stream")


def asker(client: httpx.Client, kind: str) -> Callable[[str], str]:
    """A function that asks one question `kind`'s way and returns the answer's mode."""
    stream = kind.endswith("_stream")
    path = "api/ask" if kind.startswith("api") else "v1/chat/completions"

    def body(question: str) -> dict[str, Any]:
        if kind.startswith("api"):
            return {"question": question, "stream": stream}
        return {"model": "kb-assistant", "stream": stream,
                "messages": [{"role": "user", "content": question}]}

    def ask(question: str) -> str:
        if not stream:
            reply = client.post(path, json=body(question))
            reply.raise_for_status()
            data = reply.json()
            return str(data["mode"] if "mode" in data else data["kb"]["mode"])
        with client.stream("POST", path, json=body(question)) as reply:
            reply.raise_for_status()
            text = reply.read().decode()
        if kind == "api_stream":
            answer = text.split("event: answer\ndata: ", 1)[1].split("\n", 1)[0]
            return str(json.loads(answer)["mode"])
        last = [line for line in text.splitlines() if line.startswith('data: {"id"')][-1]
        return str(json.loads(last[6:])["kb"]["mode"])

    return ask


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300, help="questions asked each way")
    parser.add_argument("--warm", type=int, default=20,
                        help="rounds first, not timed (more until none is slow)")
    args = parser.parse_args(argv)
    with served_sample("kb-openai-bench-") as (app, token), \
            httpx.Client(base_url=app.url, timeout=300,
                         headers={"Authorization": f"Bearer {token}"}) as client:
        ways = {kind: asker(client, kind) for kind in VARIANTS}
        found = ask_in_turn(ways, questions(), args.rounds, args.warm, seed=25)
    assert found.host is not None
    report: dict[str, Any] = {
        **found.report(GOAL_MS),
        "openai_vs_api": compare(found.times, "openai", "api"),
        "openai_stream_vs_api_stream": compare(found.times, "openai_stream", "api_stream"),
        "host": found.host.report(),
    }
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
