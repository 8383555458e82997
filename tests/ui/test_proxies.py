"""Which address a request comes from (ui/identity/proxies.py): pure, no server."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from ui.identity.proxies import TrustedProxies, parse_address

NONE = TrustedProxies.parse([], "ui.trusted_proxies")
LOCAL = TrustedProxies.parse(["127.0.0.1", "10.0.0.0/24", "2001:db8::/32"], "ui.trusted_proxies")


def test_without_trusted_proxies_the_peer_is_the_client() -> None:
    assert NONE.client("127.0.0.1", "203.0.113.9") == "127.0.0.1"
    assert LOCAL.client("192.0.2.4", "203.0.113.9") == "192.0.2.4"  # a peer not on the list


def test_a_trusted_proxy_names_the_right_most_address_not_its_own() -> None:
    assert LOCAL.client("127.0.0.1", "203.0.113.9") == "203.0.113.9"
    # the client wrote the left part; each proxy appended the address it saw
    assert LOCAL.client("10.0.0.2", "198.51.100.1, 203.0.113.9, 10.0.0.3") == "203.0.113.9"
    assert LOCAL.client("10.0.0.2", "10.0.0.5, 10.0.0.3") == "10.0.0.5"  # only proxies: first
    assert LOCAL.client("10.0.0.2", "") == "10.0.0.2"
    assert LOCAL.client("10.0.0.2", " , ") == "10.0.0.2"
    assert LOCAL.client("::ffff:127.0.0.1", "[2001:db9::7]:443") == "2001:db9::7"
    assert LOCAL.client("2001:db8::1", "203.0.113.9:5123") == "203.0.113.9"
    assert LOCAL.client("127.0.0.1", "unknown") == "unknown"


def test_addresses_as_peers_and_proxies_write_them() -> None:
    assert str(parse_address("::ffff:10.0.0.7")) == "10.0.0.7"
    assert str(parse_address("[2001:db8::1]:443")) == "2001:db8::1"
    assert parse_address("nobody") is None and parse_address("") is None


def test_a_wrong_entry_is_named_with_what_to_write() -> None:
    with pytest.raises(ConfigError, match=r"ui.trusted_proxies: 'nginx' is not an IP address "
                                          r"or network; list the reverse proxies"):
        TrustedProxies.parse(["127.0.0.1", "nginx"], "ui.trusted_proxies")
