"""`kb`: the command line of kb-assistant. One group, short commands; each command calls the
pipelines' public functions (through `ui/wiring.py`) and holds no retrieval or parsing logic.
This module holds the group, `kb serve` and `kb users ...`; the other commands live beside it
(`ingest_cli.py`, `query_cli.py`, `llm_cli.py`).

    kb ingest data/samples --groups all
    kb ask "How many days of annual leave can I carry over?"
    kb llm serve
    kb serve --demo
    kb users add alice --groups all,hr --admin
"""

from __future__ import annotations

import importlib
import signal
import sys
from pathlib import Path

import click

from core.access import parse_groups
from core.config import Settings
from ui.cli.common import setup_logging, with_settings
from ui.wiring import users_for

# The sample documents (their hr-only/ folder maps to group hr through ingest.folder_groups).
SAMPLES = (Path("data/samples/docs"), Path("data/samples"))


# Where the other commands live: module -> the attributes holding them (a command or a list of
# commands). A command's module, and what it imports (the ingest pipeline's PDF and Word
# parsers, say), is loaded only when that command runs: `kb ask` starts without them. A name
# missing from COMMAND_HOMES loads every module.
COMMAND_MODULES = {
    "ui.cli.ingest": ("COMMANDS",),
    "ui.cli.query": ("COMMANDS",),
    "ui.cli.llm": ("llm",),
    "ui.cli.abstain": ("abstain",),
}
COMMAND_HOMES = {
    **dict.fromkeys(("ingest", "reindex", "docs", "delete", "status", "worker"), "ui.cli.ingest"),
    **dict.fromkeys(("ask", "retrieve", "eval"), "ui.cli.query"),
    "llm": "ui.cli.llm",
    "abstain": "ui.cli.abstain",
}


class LazyGroup(click.Group):
    """A click group that imports a command's module when the command is asked for."""

    def _load(self, module_name: str) -> None:
        module = importlib.import_module(module_name)
        for attribute in COMMAND_MODULES[module_name]:
            value = getattr(module, attribute)
            for command in value if isinstance(value, list) else [value]:
                if command.name not in self.commands:
                    self.add_command(command)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            home = COMMAND_HOMES.get(cmd_name)
            for module_name in [home] if home else COMMAND_MODULES:
                self._load(module_name)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        for module_name in COMMAND_MODULES:
            self._load(module_name)
        return super().list_commands(ctx)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log INFO lines (one per outside call).")
def main(verbose: bool) -> None:
    """kb-assistant: cited answers from your PDF and Word policy documents."""
    setup_logging(verbose)


def _read_password(from_stdin: bool, confirm: bool = True) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    return str(click.prompt("Password", hide_input=True, confirmation_prompt=confirm))


@click.command("serve")
@click.option("--host", default=None, help="Interface to listen on (default: ui.host).")
@click.option("--port", default=None, type=int, help="Port (default: ui.port).")
@click.option("--demo", is_flag=True, help="No login: everyone is the demo user (group 'all').")
@click.option("--start-model", is_flag=True,
              help="Also start the model server in the background when none answers and "
                   "llm.model is on this machine; stopped with the app (scripts/demo.sh).")
@with_settings
def serve_command(settings: Settings, host: str | None, port: int | None, demo: bool,
                  start_model: bool) -> None:
    """Start the web app (chat for employees, admin tab for admins).

    \b
    kb serve --demo                 # try it: no login, sample documents
    kb serve --demo --start-model   # and vLLM for llm.model: generated answers once it is up
    kb serve --host 0.0.0.0 --port 8080
    """
    from ingest.pipeline import ingest_paths, list_documents
    from ui.web.app import DEMO_USER, serve
    from ui.wiring import store_for

    demo = demo or settings.ui.demo
    if demo:
        samples = next((settings.base_dir / p for p in SAMPLES
                        if (settings.base_dir / p).is_dir()), None)
        with store_for(settings) as store:
            if not list_documents(store) and samples is not None:
                click.echo(f"demo: the store is empty; ingesting {samples} first")
                ingest_paths(store, [samples])
        click.echo(f"demo mode: no login; everyone is user '{DEMO_USER.name}' "
                   f"(groups: {', '.join(DEMO_USER.groups)}). Not for production.")
    else:
        with users_for(settings) as users:
            count = len(users.list_users())
        if not count:
            raise click.ClickException("no users yet: add one with `kb users add NAME --groups "
                                       "all --admin`, or try `kb serve --demo`")
    model_server = None
    if start_model:
        from assistant.serving.demo import start_for_demo

        model_server, line = start_for_demo(settings)
        click.echo(f"model: {line}")
        # uvicorn re-raises a SIGTERM after its shutdown: make it unwind to the `finally`
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    url = f"http://{host or settings.ui.host}:{port or settings.ui.port}/"
    click.echo(f"serving on {url} (API: POST {url}api/ask); Ctrl+C to stop")
    try:
        serve(settings, demo=demo, host=host, port=port)
    except KeyboardInterrupt:
        pass
    finally:
        if model_server is not None:
            click.echo("stopping the model server")
            model_server.stop()


@click.group("users")
def users_group() -> None:
    """Accounts of the web app and the API: names, groups, passwords, tokens."""


@users_group.command("add")
@click.argument("name")
@click.option("--groups", default="all", show_default=True, help="Comma-separated groups.")
@click.option("--admin", is_flag=True, help="May upload, delete and re-index documents.")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
@with_settings
def users_add(settings: Settings, name: str, groups: str, admin: bool,
              password_stdin: bool) -> None:
    """Add a user (asks for the password).

    \b
    kb users add alice --groups all,hr --admin
    echo "$PW" | kb users add bob --groups all --password-stdin
    """
    password = _read_password(password_stdin)
    with users_for(settings) as users:
        user = users.add(name, password, parse_groups(groups), is_admin=admin)
    click.echo(f"added {user.name} (groups: {','.join(user.groups)}"
               f"{', admin' if user.is_admin else ''})")


@users_group.command("list")
@with_settings
def users_list(settings: Settings) -> None:
    """List users, their groups and whether they hold an API token."""
    with users_for(settings) as service:
        users = service.list_users()
    for user in users:
        flags = " ".join(f for f, on in (("admin", user.is_admin), ("see-all", user.see_all),
                                         ("token", user.has_token),
                                         ("disabled", user.disabled)) if on)
        click.echo(f"{user.name:<20} {','.join(user.groups):<24} {flags}")
    click.echo(f"{len(users)} users")


@users_group.command("passwd")
@click.argument("name")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
@with_settings
def users_passwd(settings: Settings, name: str, password_stdin: bool) -> None:
    """Set a user's password."""
    with users_for(settings) as users:
        users.require(name)
        users.set_password(name, _read_password(password_stdin))
    click.echo(f"password of {name} changed")


@users_group.command("groups")
@click.argument("name")
@click.argument("groups")
@click.option("--admin/--no-admin", default=None, help="Grant or take away admin rights.")
@with_settings
def users_groups(settings: Settings, name: str, groups: str, admin: bool | None) -> None:
    """Replace a user's groups (comma-separated)."""
    with users_for(settings) as users:
        user = users.set_groups(name, parse_groups(groups), admin)
    click.echo(f"{user.name}: groups {','.join(user.groups)}{', admin' if user.is_admin else ''}")


@users_group.command("token")
@click.argument("name")
@click.option("--days", type=float, default=None,
              help="How long the token works (default: ui.token_days).")
@with_settings
def users_token(settings: Settings, name: str, days: float | None) -> None:
    """Print a new API bearer token for NAME (replaces the old one; shown only once).

    \b
    kb users token alice --days 30
    """
    days = settings.ui.token_days if days is None else days
    if days <= 0:
        raise click.ClickException("--days must be positive")
    with users_for(settings) as users:
        token = users.new_token(name, days)
    click.echo(token)
    click.echo(f"(only its hash is stored; use it as 'Authorization: Bearer ...' for {name}; "
               f"it works {days:g} days)", err=True)


@users_group.command("revoke-token")
@click.argument("name")
@with_settings
def users_revoke_token(settings: Settings, name: str) -> None:
    """Make NAME's API token stop working at once."""
    with users_for(settings) as users:
        users.revoke_token(name)
    click.echo(f"API token of {name} revoked")


@users_group.command("disable")
@click.argument("name")
@click.option("--enable", is_flag=True, help="Allow the user again.")
@with_settings
def users_disable(settings: Settings, name: str, enable: bool) -> None:
    """Refuse NAME's logins, open sessions and API token (the account stays).

    \b
    kb users disable bob            # ends bob's sessions at his next click
    kb users disable bob --enable
    """
    with users_for(settings) as users:
        users.disable(name, not enable)
    click.echo(f"{name} {'enabled' if enable else 'disabled'}")


@users_group.command("logout")
@click.argument("name")
@with_settings
def users_logout(settings: Settings, name: str) -> None:
    """End every open web session of NAME (they must log in again)."""
    with users_for(settings) as users:
        users.end_sessions(name)
    click.echo(f"sessions of {name} ended")


@users_group.command("see-all")
@click.argument("name")
@click.option("--off", is_flag=True, help="Take the right away.")
@with_settings
def users_see_all(settings: Settings, name: str, off: bool) -> None:
    """Let admin NAME see every group's documents and feedback in the admin tab (without it, an
    admin sees only their own groups there)."""
    with users_for(settings) as users:
        users.set_see_all(name, not off)
    click.echo(f"{name}: see-all {'off' if off else 'on'}")


@users_group.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask.")
@with_settings
def users_delete(settings: Settings, name: str, yes: bool) -> None:
    """Remove NAME's account (their questions and feedback stay on record)."""
    if not yes:
        click.confirm(f"delete user {name}?", abort=True)
    with users_for(settings) as users:
        users.delete(name)
    click.echo(f"{name} deleted")


for _command in (serve_command, users_group):
    main.add_command(_command)
