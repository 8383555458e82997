"""`kb mcp`: the MCP server over stdio for a desktop client (docs/mcp.md), as the user of the
kb API token in KB_TOKEN. `kb serve` serves the same tools over HTTP at /mcp."""

from __future__ import annotations

import os

import click

from core.config import Settings
from ui.cli.common import with_settings


@click.command("mcp")
@with_settings
def mcp_command(settings: Settings) -> None:
    """Serve kb's tools to an agent over stdio (Model Context Protocol).

    The agent's client starts it, with the kb API token of the person it asks for in
    KB_TOKEN (`kb users token NAME`): it finds only what their groups may read.

    \b
    KB_TOKEN=kb_... kb mcp --config /srv/kb/config.toml
    """
    from ui.api.mcp.stdio import TOKEN_ENV, serve_stdio

    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise click.ClickException(f"{TOKEN_ENV} is empty: set it to a kb API token "
                                   "(`kb users token NAME`) in the client's config")
    serve_stdio(settings, token)
