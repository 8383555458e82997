"""The machine interfaces: how programs ask kb, each user named by a bearer token.

    asking.py      what every interface shares: the token's user, a place at the question
                   gate, answers on worker threads, each one recorded and counted
    kb_api.py      `POST /api/ask`: kb's own JSON API (docs/api.md)
    openai_api.py  `/v1`: OpenAI-compatible chat completions for Open WebUI and the openai client

    channels/      the chat platforms kb answers in (Slack, Feishu/Lark, WeCom, DingTalk,
                   Teams): their callbacks at `/channels/<platform>/events`, a module each

It imports the ui hall, identity/ (users and tokens) and page/ (links to a cited source). The
next interfaces go here, each asking through `Asking` like the ones above: an MCP server as
`mcp_server.py`; the next chat platform is a module in channels/.
"""
