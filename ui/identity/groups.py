"""Directory groups to access groups: `auth.group_map` and `auth.admin_groups`. A directory's
groups (LDAP, Active Directory) are DNs, matched by their whole DN or their CN, case aside; the
groups an OpenID provider or a proxy's header lists are plain names, matched exactly (a name
such as `x=kb-admins` or `kb-admins,ou=any` is not read as a DN).

    map_groups(["cn=HR,ou=groups,dc=example,dc=org"], {"hr": ("hr",)}, ("kb-admins",), ("all",),
               dns=True) -> (("all", "hr"), False)
    map_groups(["x=kb-admins"], {}, ("kb-admins",), ("all",)) -> (("all",), False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.access import parse_groups


def group_names(group: str) -> set[str]:
    """The names a directory group (a DN) answers to, lower case: its DN and, when its first
    RDN is a CN, that CN.

        group_names("cn=HR,ou=groups,dc=x") -> {"cn=hr,ou=groups,dc=x", "hr"}
        group_names("ou=HR,dc=x") -> {"ou=hr,dc=x"}
    """
    text = group.strip().lower()
    attribute, _, value = text.split(",", 1)[0].partition("=")
    return {text, value.strip()} if attribute.strip() == "cn" and value.strip() else {text}


def map_groups(directory_groups: Sequence[str], group_map: Mapping[str, Sequence[str]],
               admin_groups: Sequence[str], base: Sequence[str],
               dns: bool = False) -> tuple[tuple[str, ...], bool]:
    """The access groups and the admin right of someone in `directory_groups`: DNs of an LDAP
    directory (`dns`), else plain names matched exactly."""
    names: set[str] = set()
    for group in directory_groups:
        names |= group_names(group) if dns else {group.strip()}

    def named(key: str) -> bool:
        return (key.strip().lower() if dns else key.strip()) in names

    wanted = list(base)
    for key, access in group_map.items():
        if named(key):
            wanted += list(access)
    return parse_groups(wanted) or ("all",), any(named(a) for a in admin_groups)
