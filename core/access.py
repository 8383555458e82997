"""Access groups: the one rule for what a group name may be. A document carries groups, a user
holds groups, and a user sees a document when the two share one.

    parse_groups("hr, all,hr") -> ("all", "hr")
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.errors import KbError

GROUP_RE = re.compile(r"^[a-z0-9_-]{1,64}$")


def parse_groups(value: str | Sequence[str]) -> tuple[str, ...]:
    """Comma-separated text or a list of names -> sorted unique names; a bad name is a KbError.

    Names are lower-case letters, digits, '_' and '-' (so never "..", a path or a glob); this is
    the one check, used by ingestion, sidecars, config, accounts and the admin tab."""
    items = value.split(",") if isinstance(value, str) else list(value)
    groups = sorted({g.strip() for g in items if g.strip()})
    for group in groups:
        check_group(group)
    return tuple(groups)


def check_group(group: str) -> str:
    """`group` when it is a valid name, else a KbError naming the rule."""
    if not GROUP_RE.match(group):
        raise KbError(f"group {group!r}: use 1-64 lower-case letters, digits, '_' or '-'")
    return group
