"""Who may read `/metrics` (question counts, login failures, busy refusals): clients at the
addresses of `ui.metrics_allow` (default: this host's loopback), and a scraper that sends
`ui.metrics_token` as a bearer token. The address is the one `GuardGradio` settles: the socket
peer, or the client a proxy of `ui.trusted_proxies` names, never a header anyone may write.

    access = MetricsAccess.parse(["127.0.0.1", "10.0.0.0/24"], token="s3cret")
    access.verdict("10.0.0.9", "") -> 200
    access.verdict("203.0.113.9", "") -> 401   (a token would open it)
    access.verdict("203.0.113.9", "Bearer s3cret") -> 200
    MetricsAccess.parse(["127.0.0.1"], token="").verdict("203.0.113.9", "") -> 403
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass

from ui.identity.proxies import Network, parse_networks, within


@dataclass(frozen=True)
class MetricsAccess:
    networks: tuple[Network, ...] = ()
    token: str = ""

    @classmethod
    def parse(cls, entries: Sequence[str], token: str) -> MetricsAccess:
        return cls(parse_networks(
            entries, "ui.metrics_allow", "list the scrapers' addresses, e.g. [\"127.0.0.1\", "
            "\"10.0.0.5\"], or leave it empty and give them ui.metrics_token"), token)

    def allows(self, address: str) -> bool:
        return within(address, self.networks)

    def verdict(self, address: str, authorization: str) -> int:
        """200 (serve), 401 (a wrong token, or none where one would do) or 403 (no way in)."""
        scheme, _, sent = authorization.partition(" ")
        if self.token and scheme.lower() == "bearer":
            return 200 if hmac.compare_digest(sent.strip().encode(), self.token.encode()) else 401
        if self.allows(address):
            return 200
        return 401 if self.token else 403
