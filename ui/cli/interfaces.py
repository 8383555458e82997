"""The commands of the machine interfaces (ui/api/): `kb mcp`, the MCP server over stdio for a
desktop client (docs/mcp.md), and `kb channels status`, each chat platform kb answers in, whether
it is set up and what it did in the last day (docs/channels.md).

    KB_TOKEN=kb_... kb mcp        # as the user of the kb API token in KB_TOKEN
    kb channels status            # enabled, callback URL, secrets set, events, answers, refusals
    kb channels status --json
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import click

from core.config import Settings
from core.errors import ConfigError
from core.settings.channels import SECRETS
from ui.cli.common import with_settings
from ui.wiring import ledger_for

DAY_S = 86400.0


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


@click.group("channels")
def channels_group() -> None:
    """The chat platforms kb answers in (Slack, Feishu/Lark, WeCom, DingTalk, Teams)."""


def platform_status(settings: Settings, name: str, done: dict[str, Any],
                    refused: int) -> dict[str, Any]:
    """One platform's settings (never a secret's value) and its last day."""
    from ui.api.channels.hub import PLATFORMS

    table = getattr(settings.channels, name)
    secrets = {k: os.environ.get(k, "") for k in SECRETS[name]}
    problem = ""
    if table.enabled:
        try:
            PLATFORMS[name].open(settings.channels, secrets)
        except ConfigError as exc:
            problem = str(exc)
    path = f"/channels/{name}/events"
    return {"platform": name, "enabled": table.enabled, "problem": problem,
            "callback": settings.ui.public_url.rstrip("/") + path if settings.ui.public_url
            else path,
            "secrets_missing": [k for k, v in secrets.items() if not v],
            "mapped_users": len(table.user_map), "events_24h": done.get("events", 0),
            "answers_24h": done.get("answers", 0), "refused_24h": refused,
            "last_answer": time.strftime("%Y-%m-%d %H:%M", time.localtime(done["last"]))
            if done.get("last") else ""}


@channels_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per platform.")
@with_settings
def channels_status(settings: Settings, as_json: bool) -> None:
    """Each platform: enabled, its callback URL, missing secrets, the last day's events,
    answers and refused callbacks.

    \b
    kb channels status
    """
    from ui.api.channels.hub import PLATFORMS

    since = time.time() - DAY_S
    with ledger_for(settings) as ledger:
        counts = ledger.channel_counts(since)
        refused: dict[str, int] = {}
        for record in ledger.audit_records(since, event="channel.refused"):
            refused[record.actor] = refused.get(record.actor, 0) + 1
    rows = [platform_status(settings, name, counts.get(name, {}), refused.get(name, 0))
            for name in PLATFORMS]
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, ensure_ascii=False))
        return
    for row in rows:
        state = "enabled" if row["enabled"] else "off"
        click.echo(f"{row['platform']:<8} {state:<8} {row['callback']}")
        if row["problem"]:
            click.echo(f"         NOT READY: {row['problem']}")
        elif row["enabled"] or row["events_24h"]:
            click.echo(f"         last 24 h: {row['events_24h']} events, {row['answers_24h']} "
                       f"answers, {row['refused_24h']} refused callbacks; last answer "
                       f"{row['last_answer'] or 'none'}; {row['mapped_users']} mapped users")
