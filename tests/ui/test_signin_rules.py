"""The pure rules of the directory sign-in: escaping names for LDAP filters and DNs, and the
group map."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import ConfigError
from core.settings.auth import AuthSettings
from ui.identity.groups import group_names, map_groups
from ui.identity.header import session_cookies, split_groups, with_session
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
    """A directory's groups (DNs) answer to their DN or their CN, case aside."""
    assert group_names("cn=HR,ou=groups,dc=x") == {"cn=hr,ou=groups,dc=x", "hr"}
    assert group_names("ou=kb-admins,dc=x") == {"ou=kb-admins,dc=x"}  # a CN only
    groups, admin = map_groups(["cn=HR,ou=groups,dc=x", "cn=kb-admins,ou=groups,dc=x"],
                               {"hr": ("hr",), "cn=finance,ou=groups,dc=x": ("finance",)},
                               ("KB-Admins",), ("all",), dns=True)
    assert groups == ("all", "hr") and admin
    assert map_groups(["cn=finance,ou=groups,dc=x"], {"cn=finance,ou=groups,dc=x": ("fin",)},
                      (), ("all",), dns=True) == (("all", "fin"), False)
    assert map_groups(["cn=sales,dc=x"], {"hr": ("hr",)}, (), AuthSettings().base_groups,
                      dns=True) == (("all",), False)


@pytest.mark.parametrize("claimed", ["x=kb-admins", "kb-admins,ou=anything",
                                     "CN=KB-Admins,OU=Self-Service,DC=evil", "KB-Admins",
                                     " cn=kb-admins"])
def test_provider_and_header_groups_are_names_not_dns(claimed: str) -> None:
    """Groups an OpenID provider or a proxy's header lists are matched by their exact name:
    one spelt as a DN (a group anyone may create or name at the provider) grants nothing."""
    assert map_groups([claimed], {"kb-admins": ("hr",)}, ("kb-admins",), ("all",)) \
        == (("all",), False)
    assert map_groups(["kb-admins"], {"kb-admins": ("hr",)}, ("kb-admins",), ("all",)) \
        == (("all", "hr"), True)


def test_header_groups_by_commas_or_spaces() -> None:
    assert split_groups("hr, finance staff") == ["hr", "finance", "staff"]


def test_a_believed_header_replaces_the_requests_session_cookies() -> None:
    """Every session cookie the request sent, in one cookie header or several, gives way to the
    named user's session; other cookies stay."""
    names = ["access-token-k", "access-token-unsecure-k"]
    sent = [(b"cookie", b"access-token-k=alice; theme=dark"), (b"accept", b"*/*"),
            (b"cookie", b"access-token-unsecure-k=alice")]
    assert session_cookies(sent, names) == {"access-token-k": "alice",
                                            "access-token-unsecure-k": "alice"}
    assert with_session(sent, names, "dave") == [
        (b"accept", b"*/*"),
        (b"cookie", b"theme=dark; access-token-k=dave; access-token-unsecure-k=dave")]
    assert with_session(sent, names, "") == [(b"accept", b"*/*"), (b"cookie", b"theme=dark")]
    assert with_session([(b"cookie", b"access-token-k=alice")], names, "") == []


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
