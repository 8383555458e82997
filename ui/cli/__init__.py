"""`kb`: the command line of kb-assistant. One group, short commands; each command calls the
pipelines' public functions (through `ui/wiring.py`) and holds no retrieval or parsing logic.
This module holds the group; each command lives beside it (`serve.py`, `users.py`, `ingest.py`,
`docs.py`, `query.py`, `llm.py`, `abstain.py`, `audit.py`, `sync.py`, `answers.py`,
`interfaces.py` for `kb mcp` and `kb channels`, with what they share in `common.py`) and is
imported only when it runs. It imports the ui hall (wiring, audit), web/ (for `kb serve`),
api/mcp/ and api/channels/ (for `kb mcp`, `kb channels`) and the floors below; the next command
is a module here named in `COMMAND_MODULES`.

    kb ingest data/samples --groups all
    kb ask "How many days of annual leave can I carry over?"
    kb llm serve
    kb serve --demo
    kb users add alice --groups all,hr --admin
    kb audit verify
    kb sync --once
    kb answers list --suspended
    KB_TOKEN=kb_... kb mcp
    kb channels status
"""

from __future__ import annotations

import importlib

import click

from ui.cli.common import setup_logging

# Where the other commands live: module -> the attributes holding them (a command or a list of
# commands). A command's module, and what it imports (the ingest pipeline's PDF and Word
# parsers, say), is loaded only when that command runs: `kb ask` starts without them. A name
# missing from COMMAND_HOMES loads every module.
COMMAND_MODULES = {
    "ui.cli.serve": ("serve_command",),
    "ui.cli.users": ("users_group",),
    "ui.cli.ingest": ("COMMANDS",),
    "ui.cli.docs": ("docs_group",),
    "ui.cli.query": ("COMMANDS",),
    "ui.cli.llm": ("llm",),
    "ui.cli.abstain": ("abstain",),
    "ui.cli.audit": ("audit_group",),
    "ui.cli.sync": ("sync_command",),
    "ui.cli.answers": ("answers_group",),
    "ui.cli.interfaces": ("mcp_command", "channels_group"),
}
COMMAND_HOMES = {
    **dict.fromkeys(("ingest", "reindex", "delete", "status", "worker"), "ui.cli.ingest"),
    "docs": "ui.cli.docs",
    **dict.fromkeys(("ask", "retrieve", "eval"), "ui.cli.query"),
    "serve": "ui.cli.serve",
    "users": "ui.cli.users",
    "llm": "ui.cli.llm",
    "abstain": "ui.cli.abstain",
    "audit": "ui.cli.audit",
    "sync": "ui.cli.sync",
    "answers": "ui.cli.answers",
    **dict.fromkeys(("mcp", "channels"), "ui.cli.interfaces"),
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
