"""The directory adapter: sign-in and look-ups against LDAP or Active Directory with `ldap3`.

Two ways in, as `auth.ldap_bind_template` says: bind as the user (`{user}@corp.example` or a DN
template), or search for the user with the service account (`auth.ldap_bind_dn`, its password
from KB_LDAP_BIND_PASSWORD) and bind as the entry found. Groups come from the entry's `memberOf`,
a group search whose nesting is followed level by level (OpenLDAP), or AD's in-chain rule. Every
name put into a filter or a DN is escaped first; an empty password, or a name or password with a
control character, is refused without asking (LDAP takes an empty one as an anonymous bind that
succeeds); a password ldap3 itself refuses to send (SASLprep) is a wrong password too, never "the
directory is down".

    ldap = Ldap(settings.auth, os.environ.get("KB_LDAP_BIND_PASSWORD", ""))
    ldap.sign_in("carol", "pw") -> Person(name="carol", dn="uid=carol,...", groups=("cn=hr,...",))
    ldap.lookup("carol") -> the same, read with the service account; None when gone or disabled

A directory that is down, refuses the service account or fails TLS raises DirectoryUnavailable
with one line naming the setting to check; a wrong name or password is None.
"""

from __future__ import annotations

import logging
import math
import ssl
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from core.errors import DirectoryUnavailable
from core.settings.auth import AuthSettings

logger = logging.getLogger(__name__)

AD_IN_CHAIN = "1.2.840.113556.1.4.1941"  # LDAP_MATCHING_RULE_IN_CHAIN: nested membership in AD
INVALID_CREDENTIALS = 49
SEARCH_OK = (0, 4)  # success, and sizeLimitExceeded (two people for one name: nobody signs in)
MAX_NAME = 256


def filter_value(text: str) -> str:
    """`text` escaped for an LDAP filter (RFC 4515): `*`, `(`, `)`, `\\` and NUL as hex.

        filter_value("a*)(uid=*") -> "a\\\\2a\\\\29\\\\28uid=\\\\2a"
    """
    special = {"\\": r"\5c", "*": r"\2a", "(": r"\28", ")": r"\29", "\x00": r"\00"}
    return "".join(special.get(c, c) for c in text)


def dn_value(text: str) -> str:
    """`text` escaped as the value of a DN's RDN (RFC 4514).

        dn_value("a,b=c") -> "a\\\\,b\\\\=c"
    """
    out = "".join("\\" + c if c in ',+"\\<>;=' else r"\00" if c == "\x00" else c for c in text)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def fill(template: str, name: str) -> str:
    """`template` with `{user}` replaced by `name` escaped for where it stands: a DN template
    (`uid={user},ou=...`) escapes as a DN value, a UPN (`{user}@corp`) as is.

        fill("uid={user},ou=people", "x,y") -> "uid=x\\\\,y,ou=people"
    """
    escaped = dn_value(name) if "=" in template else name
    return template.replace("{user}", escaped)


def in_chain_filter(dn: str) -> str:
    """Active Directory's filter for every group holding `dn`, directly or through nested
    groups (LDAP_MATCHING_RULE_IN_CHAIN).

        in_chain_filter("CN=Carol,OU=People,DC=corp") ->
            "(member:1.2.840.113556.1.4.1941:=CN=Carol,OU=People,DC=corp)"
    """
    return f"(member:{AD_IN_CHAIN}:={filter_value(dn)})"


@dataclass(frozen=True)
class Person:
    """Someone the directory knows: the local user name, the entry's DN, the groups' DNs."""

    name: str
    dn: str
    groups: tuple[str, ...]


class Ldap:
    """One directory, opened afresh per call (a sign-in is a few round trips)."""

    def __init__(self, auth: AuthSettings, bind_password: str) -> None:
        self.auth = auth
        self.bind_password = bind_password

    @property
    def can_lookup(self) -> bool:
        """Whether a user can be read without their password (a service account is set)."""
        return bool(self.auth.ldap_bind_dn)

    def sign_in(self, name: str, password: str) -> Person | None:
        """The person when `name` and `password` are right, else None."""
        if not password or not name or len(name) > MAX_NAME or _controls(name + password):
            return None
        started = time.perf_counter()
        if self.auth.ldap_bind_template:
            with self._bound(fill(self.auth.ldap_bind_template, name), password) as conn:
                if conn is None:
                    return None
                person = self._find(conn, name)
                if person is not None and self.can_lookup:  # groups as the service sees them
                    with self._service() as service:
                        person = self._with_groups(service, person)
                elif person is not None:
                    person = self._with_groups(conn, person)
        else:
            with self._service() as service:
                person = self._find(service, name)
                if person is None:
                    return None
                with self._bound(person.dn, password) as conn:
                    if conn is None:
                        return None
                person = self._with_groups(service, person)
        logger.info("LDAP sign-in of %r at %s: %s in %.0f ms", name[:64], self.auth.ldap_url,
                    "ok" if person else "not found", 1000 * (time.perf_counter() - started))
        return person

    def lookup(self, name: str, user_filter: str = "") -> Person | None:
        """The person `name` with their groups now, read with the service account; None when
        the directory no longer finds them (removed, or disabled by ldap_user_filter). Another
        `user_filter` finds them by another attribute: "(mail={user})" by e-mail."""
        with self._service() as service:
            person = self._find(service, name, user_filter)
            person = self._with_groups(service, person) if person else None
        logger.info("LDAP look-up of %s at %s: %s", name[:64], self.auth.ldap_url,
                    "found" if person else "gone")
        return person

    # --- the calls ----------------------------------------------------------------------
    def _find(self, conn: Any, name: str, user_filter: str = "") -> Person | None:
        """The one entry `ldap_user_filter` (or `user_filter`) finds for `name` (none, or
        several: None)."""
        template = user_filter or self.auth.ldap_user_filter
        query = template.replace("{user}", filter_value(name))
        attribute = self.auth.ldap_name_attribute
        entries = self._search(conn, self.auth.ldap_base_dn, query, [attribute, "memberOf"], 2)
        if len(entries) != 1:
            return None
        dn, attributes = entries[0]
        found = _first(attributes.get(attribute)) or ("" if user_filter else name)
        if not found:
            return None
        return Person(found, dn, tuple(str(g) for g in attributes.get("memberOf") or ()))

    def _with_groups(self, conn: Any, person: Person) -> Person:
        mode = self.auth.ldap_groups
        if mode == "memberOf":
            return person
        base = self.auth.ldap_group_base_dn or self.auth.ldap_base_dn
        if mode == "ad-chain":
            query = in_chain_filter(person.dn)
            found = [dn for dn, _ in self._search(conn, base, query, ["cn"], 0)]
            return Person(person.name, person.dn, tuple(found))
        seen: dict[str, None] = {}
        frontier = [person.dn]
        for _ in range(max(1, self.auth.ldap_nesting_depth)):
            parts = [self.auth.ldap_group_filter.replace("{dn}", filter_value(dn))
                     for dn in frontier]
            query = parts[0] if len(parts) == 1 else "(|" + "".join(parts) + ")"
            frontier = [dn for dn, _ in self._search(conn, base, query, ["cn"], 0)
                        if dn.lower() not in {s.lower() for s in seen}]
            seen.update(dict.fromkeys(frontier))
            if not frontier:
                break
        return Person(person.name, person.dn, tuple(seen))

    def _search(self, conn: Any, base: str, query: str, attributes: list[str],
                limit: int) -> list[tuple[str, dict[str, Any]]]:
        import ldap3
        from ldap3.core.exceptions import LDAPException

        try:
            conn.search(base, query, ldap3.SUBTREE, attributes=attributes, size_limit=limit,
                        time_limit=max(1, int(self.auth.ldap_timeout_s)))
            result = conn.result or {}
        except (LDAPException, OSError) as exc:
            result = {"result": -1, "description": f"{type(exc).__name__}: {exc}"}
        if result.get("result") not in SEARCH_OK:
            key = "auth.ldap_base_dn" if base == self.auth.ldap_base_dn else \
                "auth.ldap_group_base_dn"
            raise DirectoryUnavailable(
                f"LDAP at {self.auth.ldap_url}: a search under {base!r} failed "
                f"({result.get('description', result.get('result'))}); check {key} and the "
                "filters (auth.ldap_user_filter, auth.ldap_groups)")
        return [(str(r["dn"]), dict(r.get("attributes") or {})) for r in conn.response or ()
                if r.get("type") == "searchResEntry"]

    @contextmanager
    def _service(self) -> Iterator[Any]:
        """A connection bound as the service account (or anonymous when none is set)."""
        dn = self.auth.ldap_bind_dn
        with self._bound(dn, self.bind_password, service=True) as conn:
            yield conn

    @contextmanager
    def _bound(self, dn: str, password: str, service: bool = False) -> Iterator[Any]:
        """A connection bound as `dn`; None when the directory says the credentials are wrong
        (for the service account that is DirectoryUnavailable: its setting is wrong)."""
        import ldap3
        from ldap3.core.exceptions import LDAPException, LDAPStartTLSError

        auth = self.auth
        conn = ldap3.Connection(self._server(), user=dn or None, password=password or None,
                                receive_timeout=max(1, math.ceil(auth.ldap_timeout_s)),
                                raise_exceptions=False,
                                auto_referrals=False)
        try:
            conn.open()
            if auth.ldap_starttls and not auth.ldap_url.lower().startswith("ldaps"):
                conn.start_tls()
            ok = _bind(conn, auth.ldap_url, service) if dn else True
        except LDAPStartTLSError as exc:
            raise DirectoryUnavailable(
                f"LDAP at {auth.ldap_url}: TLS failed ({exc}); check auth.ldap_ca_file and the "
                "server's certificate") from exc
        except (LDAPException, OSError) as exc:
            if "certificate" in str(exc).lower() or "ssl" in str(exc).lower():
                raise DirectoryUnavailable(
                    f"LDAP at {auth.ldap_url}: TLS failed ({str(exc)[:200]}); check "
                    "auth.ldap_ca_file and the server's certificate") from exc
            raise DirectoryUnavailable(
                f"LDAP at {auth.ldap_url} did not answer within {auth.ldap_timeout_s:.0f} s "
                f"({type(exc).__name__}); check auth.ldap_url and that the directory is up"
            ) from exc
        try:
            if ok is None:  # a password ldap3 would not send: wrong, whoever it is for
                yield None
            elif not ok:
                code = (conn.result or {}).get("result")
                if service or code != INVALID_CREDENTIALS:
                    what = "the service account auth.ldap_bind_dn (check KB_LDAP_BIND_PASSWORD)" \
                        if service else "a bind"
                    raise DirectoryUnavailable(
                        f"LDAP at {auth.ldap_url} refused {what}: "
                        f"{(conn.result or {}).get('description', code)}")
                yield None
            else:
                yield conn
        finally:
            conn.unbind()

    def _server(self) -> Any:
        import ldap3

        auth = self.auth
        tls = ldap3.Tls(ca_certs_file=auth.ldap_ca_file or None, validate=ssl.CERT_REQUIRED)
        return ldap3.Server(auth.ldap_url, use_ssl=auth.ldap_url.lower().startswith("ldaps"),
                            tls=tls, connect_timeout=auth.ldap_timeout_s, get_info=ldap3.NONE)


def _controls(text: str) -> bool:
    """Whether `text` holds a control character (NUL, tab, line breaks, ...), which no name or
    password a directory takes does.

        _controls("pass\tword") -> True
    """
    return any(unicodedata.category(c) == "Cc" for c in text)


def _bind(conn: Any, url: str, service: bool) -> bool | None:
    """`conn.bind()`; None when ldap3 refuses the password before sending it (SASLprep
    prohibits one of its characters), which for the service account is a setting to fix."""
    from ldap3.core.exceptions import LDAPPasswordIsMandatoryError, LDAPSASLPrepError

    try:
        return bool(conn.bind())
    except (LDAPSASLPrepError, LDAPPasswordIsMandatoryError) as exc:
        if service:
            raise DirectoryUnavailable(
                f"LDAP at {url}: the service account's password cannot be sent ({exc}); check "
                "KB_LDAP_BIND_PASSWORD") from exc
        return None


def _first(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return str(value[0]) if value else ""
    return str(value or "")
