"""Access groups: the one rule for what a group name may be. A document carries groups, a user
holds groups, and a user sees a document when the two share one.

    parse_groups("hr, all,hr") -> ("all", "hr")
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.errors import KbError

GROUP_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def parse_groups(value: str | Sequence[str]) -> tuple[str, ...]:
    """Comma-separated text or a list of names -> sorted unique names; a bad name is a KbError."""
    items = value.split(",") if isinstance(value, str) else list(value)
    groups = sorted({g.strip() for g in items if g.strip()})
    for group in groups:
        if not GROUP_RE.match(group):
            raise KbError(f"group {group!r}: use letters, digits, '.', '_' or '-' only")
    return tuple(groups)
