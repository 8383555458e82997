"""The machine interfaces: how programs ask kb, each user named by a bearer token.

    asking.py      what every interface shares: the token's user, a place at the question
                   gate, answers on worker threads, each one recorded and counted
    kb_api.py      `POST /api/ask`: kb's own JSON API (docs/api.md)
    openai_api.py  `/v1`: OpenAI-compatible chat completions for Open WebUI and the openai client

It imports the ui hall, identity/ (users and tokens) and page/ (links to a cited source). The
next interfaces go here, each asking through `Asking` like the two above: an MCP server as
`mcp_server.py`, and a chat platform's adapter (Slack, Teams, Feishu) as one module each.
"""
