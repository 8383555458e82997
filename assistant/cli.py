"""`kb`: the command line of kb-assistant. One group, short commands; each command calls the
pipelines' public functions and holds no retrieval or parsing logic.

    kb ingest data/samples --groups all
    kb ask "How many days of annual leave can I carry over?"
    kb llm serve
    kb serve
"""

from __future__ import annotations

import click

from assistant.cli_common import setup_logging


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log INFO lines (one per outside call).")
def main(verbose: bool) -> None:
    """kb-assistant: cited answers from your PDF and Word policy documents."""
    setup_logging(verbose)


def _register() -> None:
    from assistant.abstain_cli import abstain
    from assistant.llm_cli import llm
    from assistant.query_cli import COMMANDS as QUERY_COMMANDS
    from ingest.cli import COMMANDS as INGEST_COMMANDS
    from ui.cli import COMMANDS as UI_COMMANDS

    for command in [*INGEST_COMMANDS, *QUERY_COMMANDS, *UI_COMMANDS]:
        main.add_command(command)
    main.add_command(llm)
    main.add_command(abstain)


_register()
