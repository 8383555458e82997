"""The settings of sign-in (`[auth]`: local passwords, LDAP / Active Directory, OpenID Connect,
a proxy's trusted header, directory groups to access groups) and of the audit trail
(`[audit]`); core/config.py reads them with the other sections (docs/deploy.md, "Sign-in").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.settings.fields import doc


@dataclass(frozen=True)
class AuthSettings:
    """How people sign in: local passwords, a directory (LDAP / Active Directory), or a trusted
    header set by a proxy in front (docs/deploy.md, "Sign-in")."""

    password_login: bool = field(
        default=True, metadata=doc("local passwords sign in; false: only the directory, the "
                                    "trusted header and the break_glass account (local "
                                    "sessions and tokens refused too)"))
    break_glass: str = field(
        default="", metadata=doc("a local account that signs in with its password even when "
                                  "password_login is false or the directory is down"))
    group_map: dict[str, tuple[str, ...]] = field(
        default_factory=dict, metadata=doc("group -> access groups: LDAP by CN or DN, OpenID and "
                                           "header groups by exact name"))
    admin_groups: tuple[str, ...] = field(
        default=(), metadata=doc("groups whose members are admins (LDAP: CN or DN; OpenID, "
                                  "header: exact name)"))
    base_groups: tuple[str, ...] = field(
        default=("all",), metadata=doc("access groups of every directory user"))
    group_refresh_s: float = field(
        default=300.0, metadata=doc("a directory user's groups and standing are read again "
                                     "at least this often for sessions and API tokens"))
    ldap_url: str = field(
        default="", metadata=doc("ldap://host:389 or ldaps://host:636; empty: no LDAP"))
    ldap_starttls: bool = field(default=False, metadata=doc("StartTLS on an ldap:// URL"))
    ldap_ca_file: str = field(
        default="", metadata=doc("CA certificates (PEM) the server's certificate is checked "
                                  "against; empty: the system's"))
    ldap_bind_template: str = field(
        default="", metadata=doc("bind as the user: '{user}@corp.example' or "
                                  "'uid={user},ou=people,dc=...'; empty: search then bind"))
    ldap_bind_dn: str = field(
        default="", metadata=doc("service account that searches (password: env "
                                  "KB_LDAP_BIND_PASSWORD)"))
    ldap_base_dn: str = field(default="", metadata=doc("where people are searched"))
    ldap_user_filter: str = field(
        default="(uid={user})", metadata=doc("finds one enabled person; {user} is escaped"))
    ldap_name_attribute: str = field(
        default="uid", metadata=doc("the attribute that is the local user name"))
    ldap_groups: str = field(
        default="memberOf", metadata=doc("'memberOf' (the user's attribute), 'search' "
                                          "(ldap_group_filter, nesting resolved by search) or "
                                          "'ad-chain' (AD's in-chain rule)"))
    ldap_group_base_dn: str = field(default="", metadata=doc("where groups are searched"))
    ldap_group_filter: str = field(
        default="(member={dn})", metadata=doc("groups holding {dn} (escaped), for 'search'"))
    ldap_nesting_depth: int = field(
        default=5, metadata=doc("levels of nested groups followed by 'search'"))
    ldap_timeout_s: float = field(
        default=5.0, metadata=doc("connect and answer timeout of each directory call"))
    oidc_issuer: str = field(
        default="", metadata=doc("the OpenID provider's issuer URL (https); empty: no OIDC"))
    oidc_client_id: str = field(
        default="", metadata=doc("this app's client id at the provider (secret: env "
                                  "KB_OIDC_CLIENT_SECRET)"))
    oidc_scopes: tuple[str, ...] = field(
        default=("openid", "profile", "email"), metadata=doc("scopes asked for"))
    oidc_user_claim: str = field(
        default="preferred_username", metadata=doc("the claim that is the local user name"))
    oidc_groups_claim: str = field(
        default="groups", metadata=doc("the claim listing the user's directory groups"))
    oidc_redirect_url: str = field(
        default="", metadata=doc("the callback as the provider knows it, https://HOST/login/"
                                  "oidc/callback; empty: from each request's Host header"))
    trusted_proxies: tuple[str, ...] = field(
        default=(), metadata=doc("proxies (addresses, CIDRs) whose user and groups headers "
                                  "are believed"))
    user_header: str = field(
        default="", metadata=doc("header naming the signed-in user, e.g. X-Forwarded-User; "
                                  "empty: off"))
    groups_header: str = field(
        default="", metadata=doc("header listing the user's directory groups (commas)"))


@dataclass(frozen=True)
class AuditSettings:
    enabled: bool = field(default=True, metadata=doc("record the audit trail (SECURITY.md)"))
    keep_days: float = field(
        default=365.0, metadata=doc("records older than this are pruned, through a checkpoint; "
                                     "0: keep all"))
