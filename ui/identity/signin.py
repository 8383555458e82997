"""Who may sign in, and how: the policy in front of the login form, and the directory followed
after it.

`SignIn.authenticate` is what the login form's check calls (ui/identity/login.py): a local
password when `auth.password_login` allows it (always for the `auth.break_glass` account), else
the directory (`auth.ldap_url`), whose person becomes a password-less local record with the
groups of `auth.group_map`. `SignIn.follow` is the `Users.follow` hook: every session and API
token of a directory user is read again from the directory once `auth.group_refresh_s` has
passed since the last read (a user moved between groups sees the other documents; one removed
or disabled there loses sessions and token). Without a service account the directory cannot be
read without the user's password, so such a user's session then ends and a token is refused.
While `auth.password_login` is false, local accounts' sessions and tokens are refused too, but
the break-glass account's. An OpenID user's record is bound to the provider's (issuer, subject).

    signin = SignIn(users, settings.auth, Ldap(settings.auth, password))
    users.follow = signin.follow
    signin.authenticate("carol", "pw") -> User(name="carol", groups=("all", "hr"), ...)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from core.access import check_group
from core.errors import ConfigError, DirectoryUnavailable, KbError
from core.settings.auth import AuthSettings
from core.types import User
from ui.identity.groups import map_groups
from ui.identity.ldap import Ldap, Person
from ui.identity.oidc import Identity, OidcClient, OidcError
from ui.identity.users import AccountRefused, Users

logger = logging.getLogger(__name__)


GROUP_WAYS = ("memberOf", "search", "ad-chain")


def check_auth(auth: AuthSettings) -> None:
    """ConfigError naming the `[auth]` key that cannot work, before anyone tries to sign in."""
    if auth.ldap_url and not auth.ldap_url.lower().startswith(("ldap://", "ldaps://")):
        raise ConfigError(f"auth.ldap_url {auth.ldap_url!r}: write ldap://host:389 or "
                          "ldaps://host:636")
    if auth.ldap_groups not in GROUP_WAYS:
        raise ConfigError(f"auth.ldap_groups {auth.ldap_groups!r}: use one of "
                          f"{', '.join(GROUP_WAYS)}")
    if auth.ldap_url and not auth.ldap_base_dn:
        raise ConfigError("auth.ldap_base_dn is empty: name where people are searched, e.g. "
                          "\"ou=people,dc=example,dc=org\"")
    if auth.ldap_bind_template and "{user}" not in auth.ldap_bind_template:
        raise ConfigError("auth.ldap_bind_template has no {user}: e.g. \"{user}@corp.example\"")
    if auth.oidc_issuer and not auth.oidc_client_id:
        raise ConfigError("auth.oidc_issuer is set but auth.oidc_client_id is empty: register "
                          "kb-assistant at the provider and name its client id")
    if auth.user_header and not auth.trusted_proxies:
        raise ConfigError("auth.user_header is set but auth.trusted_proxies is empty: list the "
                          "proxy that sets it, or the header is believed from nobody")
    for directory_group, groups in auth.group_map.items():
        for group in groups:
            try:
                check_group(group)
            except KbError as exc:
                raise ConfigError(f"auth.group_map {directory_group!r}: {exc}") from None


class SignIn:
    """The sign-in policy of one app process, and its memory of when each directory user was
    last read (a process that restarts reads each again at first use)."""

    def __init__(self, users: Users, auth: AuthSettings, ldap: Ldap | None,
                 clock: Callable[[], float] = time.monotonic,
                 oidc: OidcClient | None = None) -> None:
        self.users, self.auth, self.ldap, self.clock = users, auth, ldap, clock
        self.oidc = oidc
        self._read_at: dict[str, float] = {}
        # who signed in through the OpenID provider, with the refresh token that reads them
        # again (in memory only: a process that restarts asks them to sign in again)
        self._identities: dict[str, Identity] = {}
        self._lock = threading.Lock()

    def authenticate(self, name: str, password: str) -> User | None:
        """The user when the name and password are right, else None; DirectoryUnavailable when
        the directory is needed and down (the local break-glass account never needs it)."""
        local = self._password_ok(name)
        source = self.users.source(name)
        if local and source in (None, "local"):
            user = self.users.authenticate(name, password)
            if user is not None or self.ldap is None or source == "local":
                return user
        elif source == "local" and not local:
            logger.warning("password sign-in of local user %r refused: auth.password_login "
                           "is false", name[:64])
        if self.ldap is None:
            return None
        person = self.ldap.sign_in(name, password)
        if person is None:
            return None
        return self._adopt(person, typed=name)

    def find(self, value: str, user_filter: str = "") -> User | None:
        """The record of the directory person `value` names (their user name, or with
        `user_filter` such as "(mail={user})" another attribute), as the directory has them
        now; None without a service account, when nobody or several are found, or when the
        record may not be theirs. DirectoryUnavailable when the directory is down."""
        if self.ldap is None or not self.ldap.can_lookup:
            return None
        person = self.ldap.lookup(value, user_filter)
        return self._quietly(person.name, person.groups, "ldap") if person else None

    def adopt_header(self, name: str, groups: Sequence[str]) -> User | None:
        """The record of a user a trusted proxy signed in, with the groups it names."""
        return self._quietly(name, groups, "header")

    def adopt_oidc(self, identity: Identity) -> User:
        """The record of someone the OpenID provider signed in, with the groups its token
        names, bound to their (issuer, subject); AccountRefused when that name is a local
        account's or another way's, bound to another subject, or disabled here."""
        user = self.adopt_bearer(identity)
        with self._lock:
            self._identities[user.name] = identity
        return user

    def adopt_bearer(self, identity: Identity) -> User:
        """`adopt_oidc` for an access token the provider signed (an agent's, at the MCP
        server): the same record, groups and refusals, and no refresh token kept."""
        subject = f"{self.oidc.issuer if self.oidc else ''}#{identity.subject}"
        return self._take(identity.name, identity.groups, "oidc", subject)

    def follow(self, user: User, source: str) -> User | None:
        """`user` (whose record is `source`'s) as the directory or the OpenID provider has them
        now, when they were read longer than `auth.group_refresh_s` ago (else `user` as is);
        None when it no longer finds them or cannot be read, and for a local account while
        `auth.password_login` is false (but the break-glass account)."""
        if source == "local":
            if self._password_ok(user.name):
                return user
            logger.info("session or token of local user %s refused: auth.password_login is "
                        "false", user.name)
            return None
        now = self.clock()
        with self._lock:
            due = now - self._read_at.get(user.name, -1e18) >= self.auth.group_refresh_s
        if not due:  # the common case: no ledger read on a session's every request
            return user
        if source == "oidc":
            return self._follow_oidc(user)
        if source != "ldap":
            return user
        if self.ldap is None or not self.ldap.can_lookup:
            logger.info("session of %s ended: %.0f s since the directory vouched for them and "
                        "no service account (auth.ldap_bind_dn) to read them again",
                        user.name, self.auth.group_refresh_s)
            return None
        try:
            person = self.ldap.lookup(user.name)
        except DirectoryUnavailable as exc:
            logger.warning("directory user %s refused for now: %s", user.name, exc)
            return None
        if person is None:
            self.users.turn_off(user.name, "ldap")
            return None
        return self._adopt(person, typed=user.name)

    def _follow_oidc(self, user: User) -> User | None:
        """An OpenID user read again through their refresh token; None (the session ends, the
        token is refused until they sign in again) when this process holds none or the
        provider refuses it (disabled or removed there, or the grant expired)."""
        with self._lock:
            identity = self._identities.get(user.name)
        if identity is None or self.oidc is None:
            logger.info("session of %s ended: %.0f s since the provider vouched for them, and "
                        "this process holds no refresh token (sign in again)", user.name,
                        self.auth.group_refresh_s)
            return None
        try:
            return self.adopt_oidc(self.oidc.refresh(identity))
        except (OidcError, AccountRefused) as exc:
            logger.warning("OIDC user %s refused for now (%s): %s", user.name, exc.reason, exc)
            with self._lock:
                self._identities.pop(user.name, None)
            return None

    def _adopt(self, person: Person, typed: str) -> User | None:
        if person.name != typed:
            logger.warning("LDAP sign-in as %r refused: the directory names them %r (sign in "
                           "with that name)", typed[:64], person.name[:64])
            return None
        return self._quietly(person.name, person.groups, "ldap")

    def _quietly(self, name: str, groups: Sequence[str], source: str) -> User | None:
        """`_take`, with a refusal logged and answered None."""
        try:
            return self._take(name, groups, source)
        except AccountRefused as exc:
            logger.warning("%s sign-in refused: %s", source, exc)
            return None

    def _take(self, name: str, groups: Sequence[str], source: str, subject: str = "") -> User:
        """The record of `name` as `source` (ldap, oidc, header) vouches for them now, with the
        access groups of `groups`; AccountRefused when the record may not be theirs
        (`Users.adopt`) or is disabled here."""
        access, is_admin = map_groups(groups, self.auth.group_map, self.auth.admin_groups,
                                      self.auth.base_groups, dns=source == "ldap")
        user = self.users.adopt(name, access, is_admin, source, subject)
        with self._lock:
            self._read_at[user.name] = self.clock()
        if user.disabled:
            raise AccountRefused("disabled", f"{name}: this account is disabled here; ask an "
                                             "administrator")
        return user

    def _password_ok(self, name: str) -> bool:
        """Whether a local account's password may sign `name` in (and its sessions and token
        count): `auth.password_login`, or the break-glass account."""
        return self.auth.password_login or bool(self.auth.break_glass and
                                                name == self.auth.break_glass)
