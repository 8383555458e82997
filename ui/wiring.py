"""The one place that builds the parts: a process (a `kb` command, the web app) opens one store,
one assistant and one users service here and hands them down. Nothing else constructs a
ledger, a Chroma client, an embedder, a model client or a token counter.

    services = open_services(settings)
    services.assistant.ask("年假可以结转吗？", groups=["all"])
    ingest_paths(services.store, [Path("data/samples")])
    services.close()
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.config import Settings
from core.errors import ConfigError
from core.ports import Generator
from core.settings.auth import AuthSettings
from core.text import load_segmenter
from store.embed.embedder import torch_device
from store.lazy_vectors import LazyVectorIndex
from store.ledger import Ledger
from store.store import Store, open_ledger, open_store
from ui.audit import AuditTrail, cli_actor
from ui.conversations import Conversations
from ui.identity.ldap import Ldap
from ui.identity.oidc import OidcClient
from ui.identity.signin import SignIn, check_auth
from ui.identity.users import Users

if TYPE_CHECKING:
    from assistant.answer import Assistant
    from ui.metrics import Metrics

logger = logging.getLogger(__name__)


LDAP_PASSWORD_ENV = "KB_LDAP_BIND_PASSWORD"
OIDC_SECRET_ENV = "KB_OIDC_CLIENT_SECRET"


@dataclass
class Services:
    """What a process works with; `close()` releases all of it."""

    settings: Settings
    store: Store
    assistant: Assistant
    users: Users
    signin: SignIn | None = None  # the sign-in policy and the directory (ui/identity/signin.py)
    # Run first by close(): stops background threads (the app's snapshot refresher).
    on_close: list[Callable[[], None]] = field(default_factory=list)
    _metrics: Metrics | None = field(default=None, repr=False)

    @property
    def metrics(self) -> Metrics:
        """The app's counters, made on first use (prometheus_client is ~0.1 s of a command's
        start that never serves them)."""
        if self._metrics is None:
            from ui.metrics import Metrics

            self._metrics = Metrics(mask=self.settings.privacy.mask)
        return self._metrics

    def close(self) -> None:
        for stop in self.on_close:
            stop()
        self.assistant.generator.close()
        self.store.close()

    @property
    def conversations(self) -> Conversations:
        """Each user's stored conversations (a stateless view of the ledger)."""
        return Conversations(self.store.ledger)


def open_assistant(store: Store) -> Assistant:
    """The assistant over `store` with the configured model client, token counter and
    reranker. The counter loads on first use (the model server may not be up yet)."""
    # imported here: commands that only ingest or manage accounts start faster without them
    from assistant.answer import Assistant
    from assistant.llm.client import LlmClient
    from assistant.llm.replicas import ReplicaPool
    from assistant.llm.tokens import LazyTokenCounter, load_token_counter
    from assistant.retrieve.rerank import load_reranker

    settings = store.settings
    llm = settings.llm
    replicas = [dataclasses.replace(llm, url=url) for url in llm.endpoints]
    first = replicas[0] if replicas else llm
    counter = LazyTokenCounter(lambda: load_token_counter(first, settings.base_dir))
    generator: Generator
    if replicas:
        clients = [LlmClient.from_settings(r, counter) for r in replicas]
        generator = ReplicaPool(clients, retry_after_s=llm.replica_retry_s)
    else:
        generator = LlmClient.from_settings(llm, counter)
    reranker = (  # torch only when a reranker is configured: `kb ask` starts without it
        load_reranker(settings.retrieve, torch_device(settings.embed.device))
        if settings.retrieve.reranker
        else None
    )
    return Assistant(store, generator, counter, reranker)


class WarmUp:
    """For a long-running process (the app), in a background thread: open Chroma (a query
    process opens it on first use: `store/lazy_vectors.py`), load jieba's dictionary (else
    the first Chinese question waits ~1 s for it), CC-CEDICT (3-4 s of CPU, else the first
    question whose bridge opens waits for it) and the OpenVINO question encoder
    (`store/embed/question_openvino.py`: ~4x faster per question than numpy, slower to load), which
    the store's questions switch to once loaded (they stay on numpy where there is no export),
    and the crosslang space's, where its embedder has one (`CrosslangSpace.warm`).

    `stop` (the process is closing) skips the steps not begun and waits for an OpenVINO model
    being compiled: one compiling while the interpreter exits aborts the process ("terminate
    called without an active exception"). A pure-Python step is left to the exit."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.stopping = threading.Event()
        self.compiling = threading.Lock()  # held by a compile, and by `stop` for good
        self.thread = threading.Thread(target=self._load, name="warm-up", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.compiling.acquire(timeout=COMPILE_WAIT_S)

    def _load(self) -> None:
        from assistant.retrieve.crosslang.glossary import Dictionary

        store = self.store
        if isinstance(store.vectors, LazyVectorIndex):
            try:
                store.vectors.index()
            except Exception as exc:  # noqa: BLE001  raised again where a question needs it
                logger.warning("vector index not opened at start: %s", exc)
        if self.stopping.is_set():
            return
        load_segmenter()
        if store.settings.retrieve.bilingual and not self.stopping.is_set():
            try:
                Dictionary.load()
            except ConfigError as exc:  # raised again where a question's bridge needs it
                logger.warning("%s", exc)
        self._compile(self._question_encoder)
        self._compile(self._space_encoder)
        if not self.stopping.is_set():
            settle_heap()

    def _compile(self, step: Callable[[], None]) -> None:
        with self.compiling:
            if not self.stopping.is_set():
                step()

    def _question_encoder(self) -> None:
        from store.embed.question_openvino import open_openvino_question_encoder

        encoder = open_openvino_question_encoder(self.store.settings.embed)
        if encoder is not None:
            self.store.use_question_encoder(encoder)

    def _space_encoder(self) -> None:
        if self.store.space is not None:
            try:
                self.store.space.warm()
            except Exception as exc:  # noqa: BLE001  its questions stay on the slower side
                logger.warning("crosslang space's question encoder not warmed: %s", exc)


COMPILE_WAIT_S = 60.0  # the longest `WarmUp.stop` waits for a compile under way


def settle_heap() -> None:
    """For a long-running process, once its parts are loaded: what is in memory now stays for
    the process's life, so the garbage collector stops walking it (`gc.freeze`). Otherwise
    each full collection walks every object of Gradio, torch, Chroma and jieba, a pause of
    every thread (~150 ms on 2 cores) that a burst of requests (a login flood) sets off."""
    gc.freeze()


PRIME_CHUNKS = 20_000  # chunks whose lines a warm process counts ahead (the first of the store)


def prime_counts(assistant: Assistant, limit: int = PRIME_CHUNKS) -> int:
    """Count the lines of the store's passages ahead, as packing renders them (first in a block,
    or later), for up to `limit` chunks: a warm process's first questions then count their
    blocks by look-ups (`LocalTokenCounter.prime`). How many pieces were new; 0 for a counter
    that counts whole texts."""
    from assistant.pack import render_passages

    prime = getattr(assistant.counter, "prime", None)
    if prime is None:
        return 0
    snap = assistant.retriever.snapshot()
    passages = (snap.passage(row) for row in range(min(len(snap.ids), limit)))
    return int(prime([render_passages([p, p]) for p in passages]))  # its lines first and later


def open_services(settings: Settings, *, warm: bool = False) -> Services:
    """The store (Chroma opened on first use: `store/lazy_vectors.py`), the assistant and the
    accounts of one process. `warm` (a long-running process: the app) opens Chroma, loads the
    faster question encoder (`WarmUp`) and counts the passages' lines (`prime_counts`) in
    the background at once."""
    store = open_store(settings, lazy_vectors=True)
    warming = WarmUp(store) if warm else None
    try:
        assistant = open_assistant(store)
    except BaseException:
        store.close()
        raise
    if warm:
        threading.Thread(target=_prime_quietly, args=(assistant,), daemon=True).start()
    audit = AuditTrail(store.ledger, settings.audit)
    users = Users(store.ledger, audit)
    services = Services(settings, store, assistant, users, sign_in_for(settings, users))
    services.on_close.append(audit.close)
    if warming is not None:
        services.on_close.append(warming.stop)
    return services


def sign_in_for(settings: Settings, users: Users) -> SignIn:
    """The sign-in policy of `settings.auth`; with a directory, `users` follows it (sessions and
    tokens read again from it every auth.group_refresh_s), and with `auth.password_login` off
    it refuses local accounts' sessions and tokens (but break-glass). The service account's
    password comes from KB_LDAP_BIND_PASSWORD, never from a config file."""
    auth = settings.auth
    check_auth(auth)
    ldap = Ldap(auth, os.environ.get(LDAP_PASSWORD_ENV, "")) if auth.ldap_url else None
    signin = SignIn(users, auth, ldap, oidc=oidc_client(auth) if auth.oidc_issuer else None)
    if auth.break_glass and users.source(auth.break_glass) != "local":
        logger.warning("auth.break_glass names %r, which is no local account with a password: "
                       "make it with `kb users add %s --admin`", auth.break_glass,
                       auth.break_glass)
    if ldap is not None or auth.oidc_issuer or not auth.password_login:
        users.follow = signin.follow
    return signin


def oidc_client(auth: AuthSettings) -> OidcClient:
    """The OpenID provider of `auth`; its client secret comes from KB_OIDC_CLIENT_SECRET, never
    from a config file."""
    return OidcClient(auth.oidc_issuer, auth.oidc_client_id,
                      os.environ.get(OIDC_SECRET_ENV, ""), auth.oidc_scopes,
                      auth.oidc_user_claim, auth.oidc_groups_claim, auth.ldap_timeout_s)


def _prime_quietly(assistant: Assistant) -> None:
    try:
        prime_counts(assistant)
    except Exception as exc:  # noqa: BLE001  a model server not up yet: questions count later
        logger.info("token counts not primed at start: %s", exc)


def services_for(settings: Settings) -> closing[Services]:
    """`open_services` for the length of a `with` block (one CLI command)."""
    return closing(open_services(settings))


def store_for(settings: Settings) -> closing[Store]:
    """Just the store, for commands that only ingest or report (no model client, no reranker).
    Chroma is opened on first use: `kb reindex` with nothing changed, `kb docs` and the like
    never import it."""
    return closing(open_store(settings, lazy_vectors=True))


def ledger_for(settings: Settings) -> closing[Ledger]:
    """Just the ledger, for `kb audit ...`."""
    return closing(open_ledger(settings))


@contextmanager
def users_for(settings: Settings) -> Iterator[Users]:
    """Just the accounts, for `kb users ...`."""
    ledger = open_ledger(settings)
    audit = AuditTrail(ledger, settings.audit)
    try:
        yield Users(ledger, audit, actor=cli_actor())
    finally:
        audit.close()
        ledger.close()
