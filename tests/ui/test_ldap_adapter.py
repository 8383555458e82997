"""The directory adapter against a real slapd (issue 26): over TLS (LDAPS and StartTLS, its
certificate from a throwaway CA: with `auth.ldap_ca_file` naming that CA the sign-in works, with
another CA it stops with one line naming that setting, before any password is sent), and
misconfigured (each mistake one line naming its setting, not a wrong password)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from core.errors import DirectoryUnavailable
from core.settings.auth import AuthSettings
from devtools.ldap_server import PEOPLE, READER_DN, READER_PASSWORD, RunningLdap, make_certificates
from ui.identity.ldap import Ldap


def _auth(url: str, ca_file: Path, starttls: bool) -> AuthSettings:
    return AuthSettings(ldap_url=url, ldap_starttls=starttls, ldap_ca_file=str(ca_file),
                        ldap_bind_dn=READER_DN, ldap_base_dn=PEOPLE, ldap_timeout_s=5.0)


@pytest.mark.parametrize("way", ["ldaps", "starttls"])
def test_tls_with_the_right_ca_and_a_wrong_one(ldap_tls_directory: RunningLdap, tmp_path: Path,
                                               way: str) -> None:
    directory = ldap_tls_directory
    assert directory.ca_file is not None
    url = directory.ldaps_url if way == "ldaps" else directory.url
    right = _auth(url, directory.ca_file, starttls=way == "starttls")
    person = Ldap(right, READER_PASSWORD).sign_in("hanna", "hanna-password")
    assert person is not None and person.name == "hanna"
    before = len(directory.log())
    other = make_certificates(tmp_path, "other-ca")
    wrong = dataclasses.replace(right, ldap_ca_file=str(other))
    with pytest.raises(DirectoryUnavailable, match="auth.ldap_ca_file"):
        Ldap(wrong, READER_PASSWORD).sign_in("hanna", "hanna-password")
    assert " BIND dn=" not in directory.log()[before:]  # no password went out
    assert " BIND dn=" in directory.log()[:before]  # (the right CA's sign-in: logged so)


@pytest.mark.parametrize(("changes", "password", "named"), [
    ({}, "not-the-readers-password", "KB_LDAP_BIND_PASSWORD"),
    ({"ldap_base_dn": "ou=nobody,dc=example,dc=org"}, READER_PASSWORD, "auth.ldap_base_dn"),
    ({"ldap_groups": "ad-chain", "ldap_group_base_dn": "ou=nowhere,dc=example,dc=org"},
     READER_PASSWORD, "auth.ldap_group_base_dn"),
    ({"ldap_user_filter": "(uid={user}"}, READER_PASSWORD, "auth.ldap_user_filter"),
])
def test_a_misconfigured_directory_names_the_setting(ldap_directory: RunningLdap,
                                                     changes: dict, password: str,
                                                     named: str) -> None:
    auth = AuthSettings(ldap_url=ldap_directory.url, ldap_bind_dn=READER_DN, ldap_base_dn=PEOPLE,
                        ldap_timeout_s=5.0)
    assert Ldap(auth, READER_PASSWORD).sign_in("hanna", "hanna-password") is not None
    wrong = dataclasses.replace(auth, **changes)
    with pytest.raises(DirectoryUnavailable, match=named) as raised:
        Ldap(wrong, password).sign_in("hanna", "hanna-password")
    assert "\n" not in str(raised.value)
