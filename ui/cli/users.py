"""`kb users ...`: accounts, groups, admin rights, API tokens and sessions, from the shell; and
what kb keeps about a person: their data as JSON, its erasure, legal holds (ui/people.py).

    kb users add alice --groups all,hr --admin
    kb users token alice --days 30
    kb users disable bob
    kb users export alice > alice.json
    kb users hold bob --why "case 2026-14"
"""

from __future__ import annotations

import json
import sys

import click

from core.access import parse_groups
from core.config import Settings
from ui.cli.common import with_settings
from ui.identity.users import Users
from ui.people import PersonalData, iso
from ui.wiring import users_for


def _read_password(from_stdin: bool, confirm: bool = True) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    return str(click.prompt("Password", hide_input=True, confirmation_prompt=confirm))


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
        sources = {user.name: service.source(user.name) for user in users}
    for user in users:
        source = sources[user.name]  # from the directory or a proxy's header: no password
        flags = " ".join(f for f, on in (("admin", user.is_admin), ("see-all", user.see_all),
                                         ("token", user.has_token),
                                         ("disabled", user.disabled),
                                         (f"from-{source}", source != "local")) if on)
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


def _people(users: Users, settings: Settings) -> PersonalData:
    return PersonalData(users.ledger, users.audit, users.actor, settings.store_path())


@users_group.command("export")
@click.argument("name")
@with_settings
def users_export(settings: Settings, name: str) -> None:
    """Print everything kept about NAME as JSON: account (no secrets), questions, feedback,
    conversations, chat platforms' answers, sessions, notes, and the audit records about them
    (the export is recorded).

    \b
    kb users export alice > alice.json
    """
    with users_for(settings) as users:
        data = _people(users, settings).export(name)
    click.echo(json.dumps(data, ensure_ascii=False, indent=1))


@users_group.command("erase")
@click.argument("name")
@click.option("--keep-account", is_flag=True, help="Keep the account (they may still sign in).")
@click.option("--yes", is_flag=True, help="Do not ask.")
@with_settings
def users_erase(settings: Settings, name: str, keep_account: bool, yes: bool) -> None:
    """Remove NAME's questions, feedback, conversations, chat platforms' answers, sessions and
    account everywhere kb keeps them, and redact the audit records about them (the chain still
    verifies; the erasure is recorded). Refused while NAME is on legal hold.

    \b
    kb users erase alice
    kb users erase alice --keep-account --yes
    """
    if not yes:
        click.confirm(f"erase everything kept about {name}? This cannot be undone", abort=True)
    with users_for(settings) as users:
        done = _people(users, settings).erase(name, keep_account)
    kept = done.pop("audit_kept")
    click.echo(", ".join(f"{table} {n}" for table, n in done.items()))
    if kept:
        click.echo(f"{kept} audit records about {name} were written before the digest form "
                   "(019_privacy) and keep their details until audit.keep_days prunes them",
                   err=True)


@users_group.command("hold")
@click.argument("name")
@click.option("--why", required=True, help="The reason (a case, a request), kept with the hold.")
@with_settings
def users_hold(settings: Settings, name: str, why: str) -> None:
    """Keep NAME's records past retention, and from erasure, until `kb users release NAME`.

    \b
    kb users hold bob --why "case 2026-14"
    """
    with users_for(settings) as users:
        new = _people(users, settings).hold(name, why)
    click.echo(f"{name}: on legal hold" + ("" if new else " (already; reason replaced)"))


@users_group.command("release")
@click.argument("name")
@with_settings
def users_release(settings: Settings, name: str) -> None:
    """End NAME's legal hold: retention applies to their records again."""
    with users_for(settings) as users:
        _people(users, settings).release(name)
    click.echo(f"{name}: hold released")


@users_group.command("holds")
@with_settings
def users_holds(settings: Settings) -> None:
    """List the people on legal hold, who put them there, when and why."""
    with users_for(settings) as users:
        holds = users.ledger.holds()
    for hold in holds:
        click.echo(f"{hold['name']:<20} {hold['held_by']:<16} "
                   f"{iso(hold['held_at'])[:10]}  {hold['reason']}")
    click.echo(f"{len(holds)} on hold")
