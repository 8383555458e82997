"""The pure rules of the directory sign-in: escaping names for LDAP filters and DNs, and the
group map."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.auth_settings import AuthSettings
from core.errors import ConfigError
from ui.identity.groups import group_names, map_groups
from ui.identity.header import split_groups
from ui.identity.ldap import dn_value, fill, filter_value, in_chain_filter
from ui.identity.signin import check_auth


def test_filter_values_escape_every_special_character() -> None:
    assert filter_value("*") == r"\2a"
    assert filter_value("carol)(uid=*") == r"carol\29\28uid=\2a"
    assert filter_value("a\x00b") == r"a\00b"
    assert filter_value("back\\slash") == r"back\5cslash"
    assert filter_value("carol") == "carol"


@given(st.text(max_size=40))
def test_an_escaped_filter_value_holds_no_filter_syntax(text: str) -> None:
    escaped = filter_value(text)
    assert not set(escaped) & {"*", "(", ")", "\x00"}
    assert escaped.replace(r"\5c", "").replace(r"\2a", "").replace(r"\28", "") \
        .replace(r"\29", "").replace(r"\00", "").count("\\") == 0


def test_dn_values_and_templates() -> None:
    assert dn_value("a,b=c") == r"a\,b\=c"
    assert dn_value(" #x ") == r"\ #x\ "
    assert dn_value("a\x00") == r"a\00"
    assert fill("uid={user},ou=people,dc=x", "x,cn=admin") == r"uid=x\,cn\=admin,ou=people,dc=x"
    assert fill("{user}@corp.example", "carol") == "carol@corp.example"


def test_group_map_by_cn_or_dn_case_aside() -> None:
    assert group_names("cn=HR,ou=groups,dc=x") == {"cn=hr,ou=groups,dc=x", "hr"}
    groups, admin = map_groups(["cn=HR,ou=groups,dc=x", "cn=kb-admins,ou=groups,dc=x"],
                               {"hr": ("hr",), "cn=finance,ou=groups,dc=x": ("finance",)},
                               ("KB-Admins",), ("all",))
    assert groups == ("all", "hr") and admin
    assert map_groups(["cn=finance,ou=groups,dc=x"], {"cn=finance,ou=groups,dc=x": ("fin",)},
                      (), ("all",)) == (("all", "fin"), False)
    assert map_groups(["cn=sales,dc=x"], {"hr": ("hr",)}, (), AuthSettings().base_groups) \
        == (("all",), False)


def test_header_groups_by_commas_or_spaces() -> None:
    assert split_groups("hr, finance staff") == ["hr", "finance", "staff"]


def test_the_ad_in_chain_filter_escapes_the_dn() -> None:
    """OpenLDAP has no in-chain rule, so this filter is checked here, not against slapd."""
    assert in_chain_filter("CN=Carol,OU=People,DC=corp") == \
        "(member:1.2.840.113556.1.4.1941:=CN=Carol,OU=People,DC=corp)"
    assert in_chain_filter(r"CN=O\2c Brien (x)*,DC=corp") == \
        r"(member:1.2.840.113556.1.4.1941:=CN=O\5c2c Brien \28x\29\2a,DC=corp)"


@pytest.mark.parametrize(("changes", "key"), [
    ({"ldap_url": "dc1.corp:389", "ldap_base_dn": "dc=x"}, "auth.ldap_url"),
    ({"ldap_groups": "memberof-nested"}, "auth.ldap_groups"),
    ({"ldap_url": "ldap://dc1:389"}, "auth.ldap_base_dn"),
    ({"ldap_bind_template": "uid=x,dc=y"}, "auth.ldap_bind_template"),
    ({"user_header": "X-Forwarded-User"}, "auth.trusted_proxies"),
    ({"group_map": {"HR": ("Human Resources",)}}, "auth.group_map"),
])
def test_auth_settings_that_cannot_work_name_their_key(changes: dict, key: str) -> None:
    check_auth(AuthSettings())  # the defaults work
    with pytest.raises(ConfigError, match=key):
        check_auth(AuthSettings(**changes))
