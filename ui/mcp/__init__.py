"""The MCP server: agents (Claude Desktop and Code, Cursor, VS Code, company-built ones) ask kb
through the Model Context Protocol, each call made as its caller, with the caller's own access
groups (docs/mcp.md). Built on the official `mcp` SDK; it holds no retrieval logic: the tools
call the assistant's and the store's public functions, and questions go the way /api and /v1
take them (ui/web/asking.py: the gate, the answering threads, the record).

    schemas.py   what the tools give back (pydantic models: the output schemas), and the
                 converters from the domain types, links absolute from ui.public_url
    tools.py     the four tools and the document resource for an identified caller, each call
                 audited (`mcp.call`: tool, arguments' digest, documents returned)
    server.py    the SDK's MCPServer: the tools' descriptions and input schemas, the
                 instructions an agent reads, the caller asked for at every call
    bearer.py    who a bearer token names: a kb API token, or the OpenID provider's access
                 token for kb's resource URL (ui/security/oidc.py, ui/signin/)
    http.py      `/mcp` in `kb serve` (streamable HTTP) behind the bearer gate (401 with the
                 OAuth challenge), the RFC 9728 metadata, mounted by ui/web/server.py
    stdio.py     `kb mcp` (ui/cli/mcp.py): the same server over stdio, as the user of KB_TOKEN

It imports the floors below and ui/'s shared parts (ui/users.py, ui/audit.py, ui/wiring.py,
ui/security/, ui/signin/) and what the HTTP APIs share in ui/web/ (asking.py, gate.py, the API's
limits and the OpenAI face's citation links); nothing in ui/ imports it but the server's wiring
and the CLI. A new tool goes in tools.py (its work) and server.py (its description).
"""
