"""A real OpenID provider for the sign-in tests: PyPI `oidc-provider-mock` (Authlib and Flask,
under uvicorn) on 127.0.0.1 at a free port, as its own process. It publishes discovery and its
signing keys, runs the authorization code flow with PKCE, and signs ID tokens; a test sets a
user's claims (`set_user`) and signs in as them by posting the provider's consent form
(`authorize`), as a browser would.

    with running_provider(tmp) as provider:
        provider.set_user("carol", {"preferred_username": "carol", "groups": ["hr-staff"]})
        location = provider.authorize(authorization_url, "carol")   # the redirect back
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from devtools.ports import free_port
from devtools.processes import stop_process, wait_answering

READY_TIMEOUT_S = 60.0


@dataclass
class RunningProvider:
    issuer: str

    def set_user(self, sub: str, claims: dict[str, Any]) -> None:
        """The claims the provider gives `sub` from now on."""
        httpx.put(f"{self.issuer}/users/{sub}", json=claims, timeout=10).raise_for_status()

    def revoke(self, sub: str) -> None:
        """Void every access and refresh token of `sub` (as disabling them would)."""
        httpx.post(f"{self.issuer}/users/{sub}/revoke-tokens", timeout=10).raise_for_status()

    def authorize(self, authorization_url: str, sub: str) -> str:
        """Sign in as `sub` on the provider's consent form; the address it redirects back to
        (the client's callback, with code and state)."""
        reply = httpx.post(authorization_url, data={"sub": sub}, timeout=10)
        if reply.status_code not in (302, 303):
            raise AssertionError(f"the provider did not redirect: {reply.status_code} "
                                 f"{reply.text[:300]}")
        return reply.headers["location"]


@contextmanager
def running_provider(work: Path, token_max_age_s: int = 3600,
                     timeout_s: float = READY_TIMEOUT_S) -> Iterator[RunningProvider]:
    """The provider on 127.0.0.1 at a free port until the block ends, its log in
    `work`/oidc.log; DidNotStart (devtools/processes.py), with the log's tail, when it does not
    answer within `timeout_s`."""
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    log = (work / "oidc.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "oidc_provider_mock", "--port", str(port),
         "--token-max-age", str(token_max_age_s)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_answering(process, f"{issuer}/.well-known/openid-configuration",
                       work / "oidc.log", timeout_s, "oidc_provider_mock")
        yield RunningProvider(issuer)
    finally:
        stop_process(process)
        log.close()
