"""What a settings field says of itself: an operator's key (`doc`: `config.toml` shows it with a
one-line comment) or a research knob (`tuning`: its default was measured, docs/tuning.md says
how). core/config.py and every section beside this module mark their fields with these.

    field(default=3, metadata=doc("past turns kept for follow-ups"))
"""

from __future__ import annotations

import dataclasses
from typing import Any


def doc(text: str) -> Any:
    """Field metadata of a key an operator sets: `config.toml` shows it with a comment."""
    return {"doc": text}


def tuning(text: str) -> Any:
    """Field metadata of a research knob: its default was measured (docs/tuning.md says how),
    so `config.toml` leaves it out; a config file or a `KB_` variable may still set it."""
    return {"doc": text, "tuning": True}


def is_tuning(f: dataclasses.Field[Any]) -> bool:
    """Whether a settings field is a research knob (`tuning`) rather than an operator's key."""
    return bool(f.metadata.get("tuning", False))
