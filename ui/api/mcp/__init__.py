"""The MCP server: agents (Claude Desktop and Code, Cursor, VS Code, company-built ones) ask kb
through the Model Context Protocol, each call made as its caller, with the caller's own access
groups (docs/mcp.md). Built on the official `mcp` SDK, it holds no retrieval logic: the tools
call the assistant's and the store's public functions, and questions go the way /api and /v1
take them (`ui/api/asking.py`: the gate, the answering threads, the record).

    tools = KbTools(asking, assistant, store, audit, base_url="https://kb.example.com")
    server = build_server(tools, caller)   # caller(ctx) -> Who: the user of the call at hand
    mount_mcp(app, services, asking)       # /mcp in kb serve (ui/web/server.py)
    serve_stdio(settings, token)           # kb mcp (ui/cli/interfaces.py)

Every call names its caller: over HTTP the bearer token of the request (a kb API token, or the
OpenID provider's access token for kb's resource URL, `ui.public_url` + /mcp), over stdio the
token `kb mcp` was started with. A request without a good token gets 401 and the
`WWW-Authenticate` header that points a client at the RFC 9728 metadata, from which it starts
the OAuth flow. An account disabled, a token revoked or a group removed counts at the next call.

The server is put together from one part per concern, each in its own module:

    schemas.py  what the tools give back (pydantic models: the output schemas), and the
                converters from the domain types, links absolute from ui.public_url
    tools.py    the four tools and the document resource for an identified caller, each call
                audited (`mcp.call`: tool, arguments' digest, documents returned)
    server.py   the SDK's MCPServer: the tools' descriptions and input schemas, the
                instructions an agent reads, the caller asked for at every call
    bearer.py   who a bearer token names: a kb API token, or the OpenID provider's access
                token (identity/oidc.py's checks, identity/signin.py's binding of a subject)
    http.py     `/mcp` (streamable HTTP) behind the bearer gate, the protected-resource
                metadata at /.well-known/oauth-protected-resource
    stdio.py    `kb mcp`: the same server over stdio, as the user of KB_TOKEN

It imports what the machine interfaces share in its parent room (asking.py, and the API's
limits and the OpenAI face's citation links), identity/ (users, tokens, OpenID checks), the
ui hall (the wiring, the audit trail, the gate, labels), page/render.py's mode labels and the
floors below; nothing imports it but ui/web/server.py and ui/cli/interfaces.py. A new tool goes in
tools.py (its work, audited like the others) and server.py (its description and schemas); a
new transport gets a module of its own beside http.py and stdio.py.
"""
