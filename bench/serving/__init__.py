"""The servers as their clients meet them: the model server on a GPU, the HTTP API, sign-in,
several app processes sharing one store. Each module is a benchmark run from the repository
root that prints one JSON report, with its baseline from the same run.

    gpu_serve/          vLLM on a lent GPU, driven through kb's own client with kb's packed
                        prompts: answers/s and time to the first token (its __init__.py, and
                        docs/gpu.md, say how)
    openai_overhead.py  `POST /v1/chat/completions` beside `POST /api/ask`, the same questions
                        in turn (`python -m bench openai`)
    mcp_overhead.py     the MCP server's `ask` tool through the official client beside
                        `POST /api/ask` and `/v1`, the same questions in turn (`mcp`)
    in_turn.py          what those two share: the sample store served, the questions asked
                        each way in turn after a warm-up, the ways compared
    ldap_signin.py      the login check against a real `slapd`, beside a local password (`ldap`)
    refresh_delay.py    how soon other app processes answer from an upload (`refresh`)

    .venv/bin/python -m bench openai --full
    python3 -m bench.serving.gpu_serve run --prompts prompts.json --model /tmp/ernie ...

This __init__.py imports nothing: gpu_serve/ runs on a GPU machine without kb's ingest stack.
A module here may import `core/` to `ui/`, devtools/, bench/common.py and its neighbours here, never
another room of bench/. The next benchmark of a server, one client at a time, goes here; many at
once go to load/.
"""
