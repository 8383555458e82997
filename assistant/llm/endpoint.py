"""Where the model server is, whether it answers, and the certificate store every client of
it verifies with.

    endpoint_url(settings.llm)                       -> "http://127.0.0.1:8000/v1"
    probe("http://127.0.0.1:8000/v1").models[0].id  -> "ernie-4.5-0.3b" (when it is up)
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass

import httpx

from core.config import LlmSettings


@dataclass(frozen=True)
class ServedModel:
    id: str
    max_model_len: int | None


@dataclass(frozen=True)
class EndpointStatus:
    """What `probe` saw at an endpoint."""

    url: str
    up: bool
    models: tuple[ServedModel, ...] = ()
    error: str = ""


def endpoint_url(llm: LlmSettings) -> str:
    """`llm.url` when set, else the server `kb llm serve` starts: http://host:port/v1."""
    if llm.url:
        return llm.url.rstrip("/")
    host = "127.0.0.1" if llm.host in ("0.0.0.0", "::", "") else llm.host
    return f"http://{host}:{llm.port}/v1"


def probe(url: str, timeout_s: float = 3.0) -> EndpointStatus:
    """GET {url}/models: is the endpoint up, and which models (with max length) it serves."""
    url = url.rstrip("/")
    try:
        response = httpx.get(f"{url}/models", timeout=timeout_s)
        response.raise_for_status()
        data = response.json().get("data", [])
    except (httpx.HTTPError, ValueError) as exc:
        return EndpointStatus(url=url, up=False, error=str(exc) or type(exc).__name__)
    models = tuple(ServedModel(id=str(m.get("id")), max_model_len=m.get("max_model_len"))
                   for m in data)
    return EndpointStatus(url=url, up=True, models=models)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The certificate store every model-server client of the process verifies with, as httpx
    makes it by default (`SSL_CERT_FILE` and the like, else certifi's): loaded once, not per
    client (~0.1 s each, in a cold `kb ask` twice: the client and the token counter's)."""
    return httpx.create_ssl_context()
