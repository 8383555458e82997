"""`kb serve`: the web app (chat for employees, admin tab for admins), and in demo mode the
sample documents ingested first and, with --start-model, the model server beside it."""

from __future__ import annotations

import signal
from pathlib import Path

import click

from core.config import Settings
from ui.cli.common import with_settings
from ui.wiring import users_for

# The sample documents (their hr-only/ folder maps to group hr through ingest.folder_groups).
SAMPLES = (Path("data/samples/docs"), Path("data/samples"))


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
    from ui.handlers import DEMO_USER
    from ui.web.server import serve
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
        click.echo("the Admin tab (uploads, re-index, approved answers): scripts/demo.sh --admin")
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
    click.echo(f"serving on {url} (API: POST {url}api/ask; OpenAI-compatible: {url}v1); "
               "Ctrl+C to stop")
    try:
        serve(settings, demo=demo, host=host, port=port)
    except KeyboardInterrupt:
        pass
    finally:
        if model_server is not None:
            click.echo("stopping the model server")
            model_server.stop()
