"""Directory groups to access groups: `auth.group_map` and `auth.admin_groups`, matched by a
group's CN or its whole DN, case aside.

    map_groups(["cn=HR,ou=groups,dc=example,dc=org"], {"hr": ("hr",)}, ("kb-admins",), ("all",))
        -> (("all", "hr"), False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.access import parse_groups


def group_names(group: str) -> set[str]:
    """The names a directory group answers to: its DN and the value of its first RDN.

        group_names("cn=HR,ou=groups,dc=x") -> {"cn=hr,ou=groups,dc=x", "hr"}
        group_names("finance") -> {"finance"}
    """
    text = group.strip().lower()
    first = text.split(",", 1)[0]
    return {text, first.split("=", 1)[1].strip() if "=" in first else first}


def map_groups(directory_groups: Sequence[str], group_map: Mapping[str, Sequence[str]],
               admin_groups: Sequence[str], base: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """The access groups and the admin right of someone in `directory_groups`."""
    names: set[str] = set()
    for group in directory_groups:
        names |= group_names(group)
    wanted = list(base)
    for key, access in group_map.items():
        if key.strip().lower() in names:
            wanted += list(access)
    is_admin = any(a.strip().lower() in names for a in admin_groups)
    return parse_groups(wanted) or ("all",), is_admin
