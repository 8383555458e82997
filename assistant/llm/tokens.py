"""Exact token counts with the served model's own tokenizer.

The count of a rendered conversation equals the `usage.prompt_tokens` vLLM reports for it: the
local counter renders the model folder's chat template with `add_generation_prompt=True` and
tokenizes without adding special tokens, exactly as vLLM's chat endpoint does; the remote one
asks the server's own `/tokenize`.

    counter = load_token_counter(settings.llm, settings.base_dir)
    counter.count("年假最多可结转5天。")                   -> 9   (depends on the tokenizer)
    counter.count_messages([{"role": "user", "content": "Hi"}]) -> prompt tokens of the chat

Counts of pieces do not add up exactly to the count of their concatenation (merges cross the
seams): pack with `count`/`count_many`, then check the whole prompt with `count_messages`.
Where the tokenizer provably does add up at a seam (`seam_additive`: GPT-2's byte-level BPE
never merges across a non-space character followed by a space), the local counter counts a
long text as the sum of its paragraphs' cached counts, exactly: a packed block or a prompt
whose passages were counted before costs a few dictionary look-ups, not a tokenization.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx

from assistant.llm.endpoint import endpoint_url, tls_context
from core.config import LlmSettings
from core.errors import GenerationError, GenerationUnavailable
from core.ports import TokenCounter
from core.types import Message

logger = logging.getLogger(__name__)

# Where a long text is cut into separately counted pieces: before a line break that follows a
# non-space character (lines: a passage cut at a sentence end shares all but its last line with
# the whole passage), and after a passage number "\n\n[12]" (before its space). Each cut is a
# non-space character followed by a space one (Python's \S is narrower than any regex engine's
# non-space: str.isspace covers every Unicode White_Space character).
_SEAM = re.compile(r"\S(?=\n)|\n\n\[\d{1,4}\](?= )")
SPLIT_MIN_CHARS = 256  # shorter texts are tokenized whole
PIECES_KEPT = 200_000  # counted pieces (lines) remembered; all forgotten when more come
# Where a block of numbered passages is cut first: a block is counted as the sum of its
# passages' counts, each remembered with its number, so that packing, which counts one block
# after another made of the same passages, cuts and looks up only the passages new to it
# (`split_at_passages`). Cutting whole blocks again was half of `fill_budget`'s time (a
# replay of the overhead bench's questions: 3.5 -> 1.75 ms a call).
PASSAGE_SEAM = "\n\n["
PASSAGES_KEPT = 20_000  # numbered passages remembered (~1-2 KB each); all forgotten past it


def split_at_seams(text: str) -> list[str]:
    """`text` cut where a seam-additive tokenizer's count adds up (see `_SEAM`).

    split_at_seams("甲。\n\n[2] 乙\n丙") -> ["甲。", "\n\n[2]", " 乙", "\n丙"]
    """
    pieces, start = [], 0
    for match in _SEAM.finditer(text):
        if match.end() > start:
            pieces.append(text[start : match.end()])
            start = match.end()
    pieces.append(text[start:])
    return [p for p in pieces if p]


def split_at_passages(text: str) -> list[str]:
    """`text` cut before each "\n\n[" that follows a non-space character: a block of numbered
    passages cut into its passages, each with its number (a seam of `_SEAM`'s kind).

    split_at_passages("[1] 甲。\n\n[2] 乙") -> ["[1] 甲。", "\n\n[2] 乙"]
    """
    parts = text.split(PASSAGE_SEAM)
    out = [parts[0]]
    for part in parts[1:]:
        if out[-1] and not out[-1][-1].isspace():
            out.append(PASSAGE_SEAM + part)
        else:
            out[-1] += PASSAGE_SEAM + part
    return out


def seam_additive(backend: Any) -> bool:
    """Whether a `tokenizers.Tokenizer` counts a text cut between a non-space and a space
    character as the sum of its two sides: no normalizer, GPT-2's byte-level pre-tokenizer
    (its regex never lets a piece run from a non-space into a space character) without a
    prefix space, a BPE without dropout, and added tokens that contain no space and strip
    nothing around them. Qwen's split regex (punctuation keeps the line breaks after it) or
    SentencePiece models are not: they are counted whole."""
    try:
        from tokenizers import models, pre_tokenizers

        pre = backend.pre_tokenizer
        if backend.normalizer is not None or not isinstance(pre, pre_tokenizers.ByteLevel):
            return False
        if not pre.use_regex or pre.add_prefix_space:
            return False
        model = backend.model
        if not isinstance(model, models.BPE) or model.dropout:
            return False
        return all(
            not (a.lstrip or a.rstrip or a.single_word) and not any(c.isspace() for c in a.content)
            for a in backend.get_added_tokens_decoder().values()
        )
    except (ImportError, AttributeError):  # another tokenizers version: count whole
        return False

def local_model_dir(model: str, base_dir: Path) -> Path | None:
    """The folder with `model`'s files: a local path (relative ones start at `base_dir`) or a
    hub name already in the local Hugging Face cache. None when neither has it."""
    path = Path(model).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    if (path / "config.json").is_file():
        return path.resolve()
    if model.count("/") != 1 or Path(model).expanduser().exists():
        return None
    if not _in_hub_cache(model):
        return None  # without importing huggingface_hub: a second of a cold `kb ask`
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except Exception:  # not cached, or the hub library refuses the name: either way absent
        return None


def _in_hub_cache(model: str) -> bool:
    """Whether the Hugging Face cache has a folder for the hub name `model` (where
    huggingface_hub would look: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub).
    """
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache",
                                                     "huggingface")
    cache = (
        os.environ.get("HF_HUB_CACHE")
        or os.environ.get("HUGGINGFACE_HUB_CACHE")
        or os.path.join(home, "hub")
    )
    return (Path(cache) / ("models--" + model.replace("/", "--"))).is_dir()


class LocalTokenCounter:
    """Counts with the model folder's tokenizer and chat template (fast: no network)."""

    def __init__(self, model_dir: Path, *, trust_remote_code: bool = False) -> None:
        from transformers import AutoTokenizer

        self.model_dir = model_dir
        self._tokenizer: Any = AutoTokenizer.from_pretrained(
            str(model_dir), trust_remote_code=trust_remote_code
        )
        backend = getattr(self._tokenizer, "backend_tokenizer", None)
        self._backend: Any = backend if getattr(self._tokenizer, "is_fast", False) else None
        self.additive = self._backend is not None and seam_additive(self._backend)
        self._count_cached = lru_cache(maxsize=65536)(self._count)
        self._pieces: dict[str, int] = {}  # piece -> tokens, emptied when PIECES_KEPT is passed
        self._passages: dict[str, int] = {}  # numbered passage -> tokens (`PASSAGE_SEAM`)
        self._specials: frozenset[str] | None = None

    def count(self, text: str) -> int:
        return self._count_cached(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if self._backend is not None:
            encodings = self._backend.encode_batch(list(texts), add_special_tokens=False)
            return [len(e.ids) for e in encodings]
        return [self.count(t) for t in texts]

    def count_messages(self, messages: Sequence[Message]) -> int:
        return self.count(self.render(messages))

    def special_tokens(self) -> frozenset[str]:
        """Every token the tokenizer treats as special: its named ones and each added token
        marked special (ERNIE: <s>, <|end_of_sentence|>, <mask:4>, <|LOC_5|>, …)."""
        if self._specials is None:
            added = getattr(self._tokenizer, "added_tokens_decoder", {}).values()
            self._specials = frozenset(self._tokenizer.all_special_tokens) | {
                t.content for t in added if t.special}
        return self._specials

    def prime(self, texts: Sequence[str], batch: int = 256) -> int:
        """Count the pieces of `texts` ahead (a seam-additive tokenizer: their lines), so that
        a block or prompt made of them later costs look-ups only; how many pieces were new.
        Stops short of PIECES_KEPT. A tokenizer counted whole primes nothing.

        counter.prime(["[1] 《年假》 p.1\n第一行\n第二行"]) -> 3
        """
        if not self.additive:
            return 0
        known, done = self._pieces, 0
        for start in range(0, len(texts), batch):
            pieces = (p for t in texts[start : start + batch] for p in split_at_seams(t))
            new = [p for p in dict.fromkeys(pieces) if p not in known]
            if not new:
                continue
            if len(known) + len(new) > PIECES_KEPT:
                break
            known.update(zip(new, self.count_many(new), strict=True))
            done += len(new)
        return done

    def render(self, messages: Sequence[Message]) -> str:
        """The prompt text vLLM builds from `messages`."""
        rendered = self._tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=False, add_generation_prompt=True
        )
        return str(rendered)

    def _count(self, text: str) -> int:
        if self.additive and len(text) >= SPLIT_MIN_CHARS:
            passages = self._passages  # shared with other threads, as `_pieces`
            total = 0
            for part in split_at_passages(text):
                n = passages.get(part)
                if n is None:
                    n = self._count_pieces(part)
                    if len(passages) >= PASSAGES_KEPT:
                        passages.clear()
                    passages[part] = n
                total += n
            return total
        return self._encode(text)

    def _count_pieces(self, text: str) -> int:
        """`text`'s count as the sum of its pieces' (`split_at_seams`), those not yet known
        tokenized in one call and remembered."""
        pieces = split_at_seams(text)
        known = self._pieces  # shared with other threads (prime, other questions)
        counts = {p: known.get(p) for p in dict.fromkeys(pieces)}
        new = [p for p, n in counts.items() if n is None]
        if new:  # one call for the pieces not seen before (a new passage: its lines)
            fresh = dict(zip(new, self.count_many(new), strict=True))
            counts.update(fresh)
            if len(known) + len(fresh) > PIECES_KEPT:
                known.clear()
            known.update(fresh)
        return sum(counts[p] or 0 for p in pieces)

    def _encode(self, text: str) -> int:
        if self._backend is not None:
            return len(self._backend.encode(text, add_special_tokens=False).ids)
        return len(self._tokenizer(text, add_special_tokens=False)["input_ids"])


class RemoteTokenCounter:
    """Counts with the server's `/tokenize` (for a model whose files are not on this machine).
    Results are cached; each uncached count is one HTTP call."""

    def __init__(
        self, url: str, served_name: str, *, timeout_s: float = 10.0,
        http: httpx.Client | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.tokenize_url = self.url.removesuffix("/v1") + "/tokenize"
        self.served_name = served_name
        self._http = http or httpx.Client(timeout=timeout_s, verify=tls_context())
        self._cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        key = "p" + text
        if key not in self._cache:
            body = {"model": self.served_name, "prompt": text, "add_special_tokens": False}
            self._cache[key] = self._tokenize(body)
        return self._cache[key]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def count_messages(self, messages: Sequence[Message]) -> int:
        plain = [dict(m) for m in messages]
        key = "m" + json.dumps(plain, ensure_ascii=False, sort_keys=True)
        if key not in self._cache:
            body = {"model": self.served_name, "messages": plain, "add_generation_prompt": True}
            self._cache[key] = self._tokenize(body)
        return self._cache[key]

    def _tokenize(self, body: dict[str, Any]) -> int:
        try:
            response = self._http.post(self.tokenize_url, json=body)
        except httpx.HTTPError as exc:
            raise GenerationUnavailable(
                f"vLLM at {self.url} did not answer /tokenize ({exc}); start it with "
                "`kb llm serve` or set llm.model to a local model folder"
            ) from exc
        if response.status_code != 200:
            raise GenerationError(
                f"vLLM at {self.url} refused /tokenize: HTTP {response.status_code} "
                f"{response.text[:200]} (check llm.served_name)"
            )
        count = int(response.json()["count"])
        logger.info("POST %s: %d tokens", self.tokenize_url, count)
        return count


def special_tokens(counter: TokenCounter) -> frozenset[str]:
    """The served tokenizer's special tokens where `counter` has the tokenizer (a local model
    folder); none for a counter that asks the server, whose prompts are then defused by
    ERNIE's token shapes alone (`assistant.prompt.defuse`)."""
    known = getattr(counter, "special_tokens", None)
    return frozenset(known()) if known is not None else frozenset()


def load_token_counter(llm: LlmSettings, base_dir: Path) -> TokenCounter:
    """The local counter when the model's folder is on this machine, else the server's."""
    model_dir = local_model_dir(llm.model, base_dir)
    if model_dir is not None:
        return LocalTokenCounter(model_dir, trust_remote_code=llm.trust_remote_code)
    return RemoteTokenCounter(endpoint_url(llm), llm.served_name)


class LazyTokenCounter:
    """A `TokenCounter` loaded on first use, and tried again after a failure: a process can
    start before its model server, and count once the server answers. One load at a time: an
    app primes counts in a background thread while its first question may need the counter, and
    two threads importing transformers at once fail ("cannot import name 'AutoTokenizer'")."""

    def __init__(self, load: Callable[[], TokenCounter]) -> None:
        self._load = load
        self._counter: TokenCounter | None = None
        self._lock = threading.Lock()

    def _get(self) -> TokenCounter:
        if self._counter is None:
            with self._lock:
                if self._counter is None:
                    self._counter = self._load()
        return self._counter

    def count(self, text: str) -> int:
        return self._get().count(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return self._get().count_many(texts)

    def count_messages(self, messages: Sequence[Message]) -> int:
        return self._get().count_messages(messages)

    def special_tokens(self) -> frozenset[str]:
        return special_tokens(self._get())

    def prime(self, texts: Sequence[str]) -> int:
        """`LocalTokenCounter.prime` where the loaded counter has it, else nothing."""
        prime = getattr(self._get(), "prime", None)
        return int(prime(texts)) if prime is not None else 0
