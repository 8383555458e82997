"""What every `kb` command shares: --config/--store, logging, turning our errors into
one-line messages with a non-zero exit, and `shown` for the names (file names, reasons) that
commands print one a line."""

from __future__ import annotations

import functools
import logging
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from core.config import Settings, load_settings
from core.errors import KbError
from core.offline import offline_environment

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_CONFIG = "config.toml"


def shown(text: str) -> str:
    r"""`text` for one line of a listing: control, format and line-separator characters (a
    newline, an escape, a right-to-left override) escaped, so a file's name cannot start a
    line of its own or dress itself up as another.

    shown("evil\nname.pdf") -> "evil\\nname.pdf";  shown("年假.pdf") -> "年假.pdf"
    """
    return "".join(ch.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch
                   for ch in text)


def settings_for(config: str | None, store: str | None) -> Settings:
    """Settings from --config (default ./config.toml when present) and --store."""
    if config is None and Path(DEFAULT_CONFIG).exists():
        config = DEFAULT_CONFIG
    settings = load_settings(Path(config) if config else None)
    return settings.with_store(store) if store else settings


def with_settings(func: F) -> F:
    """Adds --config and --store to a command and passes `settings` in their place."""

    @click.option(
        "--store",
        "store",
        type=click.Path(file_okay=False),
        default=None,
        help="Store folder (Chroma, ledger); overrides store.path.",
    )
    @click.option(
        "--config",
        "config",
        type=click.Path(dir_okay=False),
        default=None,
        help="Config file (default: ./config.toml when present).",
    )
    @functools.wraps(func)
    def wrapper(*args: Any, config: str | None, store: str | None, **kwargs: Any) -> Any:
        offline_environment()
        try:
            settings = settings_for(config, store)
            return func(*args, settings=settings, **kwargs)
        except KbError as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper  # type: ignore[return-value]


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)  # our adapters log each call once
