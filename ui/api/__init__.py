"""The machine interfaces: how programs ask kb, each user named by a bearer token.

    asking.py      what every interface shares: the token's user, a place at the question
                   gate, answers on worker threads, each one recorded and counted
    kb_api.py      `POST /api/ask`: kb's own JSON API (docs/api.md)
    openai_api.py  `/v1`: OpenAI-compatible chat completions for Open WebUI and the openai client
    client_tasks.py chat front ends' own tasks (Open WebUI's title, tags, follow-ups), answered
                   without retrieval
    mcp/           the MCP server for agents (docs/mcp.md): four tools and the document
                   resource as the caller, `/mcp` in `kb serve` and `kb mcp` over stdio; a
                   room of its own, its map in its `__init__.py`
    channels/      the chat platforms kb answers in (Slack, Feishu/Lark, WeCom, DingTalk,
                   Teams): their callbacks at `/channels/<platform>/events`, a module each; a
                   room of its own, its map in its `__init__.py`

It imports the ui hall, identity/ (users and tokens) and page/ (links to a cited source); mcp/
and channels/ import this room's modules, never the other way round. The next interfaces go
here, each asking through `Asking` like the ones above: one module, or a room of its own like
mcp/ and channels/ where it needs several; the next chat platform is a module in channels/.
"""
