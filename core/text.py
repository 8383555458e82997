"""The text rules both sides share: which characters are Chinese, which language a text is in,
where sentences end, and the terms the lexical index is built from. Ingestion tokenizes every
passage with `tokenize` and stores the terms; the query side tokenizes questions the same way.
A change to these rules changes stored terms: raise `TEXT_VERSION`, and a store written under
another version is refused until `kb reindex --full` rebuilds it.

    detect_lang("出差住宿标准是多少？") -> "zh"
    split_sentences("请假。报销！") -> ["请假。", "报销！"]
    tokenize("年休假十天") -> ["休假", "年休假", "十天", "10"]
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

# Raised whenever `tokenize` (or anything it calls) would give a stored passage other terms.
TEXT_VERSION = 1

Lang = Literal["zh", "en"]

# CJK ideographs (with 〇): what Chinese words are made of.
IDEOGRAPH = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Ideographs plus CJK punctuation, kana and full-width forms (the ranges the gold-quote checker
# uses): characters that take no space beside each other.
CJK = (
    "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
)
CJK_CHAR = re.compile(f"[{CJK}]")
CJK_RUN = re.compile(f"[{CJK}]+")
IDEOGRAPH_RUN = re.compile(f"[{IDEOGRAPH}]+")

# --- language -----------------------------------------------------------------------------
_IDEOGRAPH = re.compile(f"[{IDEOGRAPH}]")
_LATIN = re.compile(r"[A-Za-z]")

# One CJK character carries about as much as a short English word (~3 letters), so a share of
# 0.25 of letters means roughly half of the "words" are Chinese.
ZH_SHARE = 0.25


def cjk_share(text: str) -> float:
    """The share of CJK characters among CJK characters and Latin letters (0.0 for neither).

    cjk_share("PIV卡") -> 0.25
    """
    cjk = len(_IDEOGRAPH.findall(text))
    latin = len(_LATIN.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


_LETTER = re.compile(r"[^\W\d_]")


def latin_share(text: str) -> float:
    """The share of Latin letters among all letters, of any script (0.0 for none).

    latin_share("leave 휴가") -> 0.714
    """
    letters = len(_LETTER.findall(text))
    return len(_LATIN.findall(text)) / letters if letters else 0.0


def other_lang(lang: str) -> Lang:
    """The other of the two languages kb reads.

    other_lang("zh") -> "en"
    """
    return "en" if lang == "zh" else "zh"


def detect_lang(text: str) -> Lang:
    """Return "zh" when CJK characters are at least a quarter of the letters, else "en".

    detect_lang("How many days of annual leave?") -> "en"
    """
    return "zh" if cjk_share(text) >= ZH_SHARE else "en"


# --- sentences ----------------------------------------------------------------------------

_SENTENCE_END = re.compile(
    r"""(?<=[。！？；!?…])[”’"')\]）》」』]*"""  # Chinese and hard English enders, with closers
    r"""|(?<=[.;:])(?=\s)"""  # English: a period/semicolon followed by white space
    r"""|\n"""  # a line break inside a block (table rows, list items)
)


def split_sentences(text: str) -> list[str]:
    """Split at sentence ends, keeping every character.

    split_sentences("请假。报销！") -> ["请假。", "报销！"]
    """
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if end > start:
            pieces.append(text[start:end])
        start = end
    if start < len(text):
        pieces.append(text[start:])
    return [p for p in pieces if p.strip()]


# --- index terms --------------------------------------------------------------------------

_RUN = re.compile(
    rf"[{IDEOGRAPH}]+"  # a CJK run
    r"|[a-z]+(?:'[a-z]+)?"  # an English word (don't, employee's)
    r"|\d+(?:\.\d+)?"  # a number (21.75)
)
_CN_NUMERAL = re.compile(r"[零〇一二两三四五六七八九十百千万]+")
_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5,
              "六": 6, "七": 7, "八": 8, "九": 9}  # fmt: skip
_CN_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
# A lone numeral character counts as a number only before one of these (一个月, 三日, 两年).
_MEASURE = set("个日天年月周岁小时次倍分名人项条款")

EN_STOP = frozenset(
    """a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing done during each else for from further get
    gets got had has have having he her here hers him his how i if in into is it its itself just
    me more most my myself of off on once only or other our ours out over own please same she
    should so some such than that the their theirs them then there these they this those through
    to too under until up us very was we were what when where which while who whom why will with
    would you your yours""".split()
)
ZH_STOP = frozenset(
    "的 了 吗 呢 吧 啊 呀 么 是 在 和 与 及 或 我 你 他 她 它 我们 你们 他们 什么 怎么 怎样 如何 "
    "多少 哪些 哪个 哪 几 请问 一下 这 那 这个 那个 就 都 也 还 被 把 给 让 会 要 吗？".split()
)


def _suffix(word: str, suffixes: Sequence[str]) -> str | None:
    for s in suffixes:
        if word.endswith(s):
            return s
    return None


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stemmer: plurals, -ing/-ed, a few derivational endings, final -e.

    stem("carried") -> "carri"; stem("carries") -> "carri"; stem("leaving") -> "leav"
    """
    w = word
    if len(w) <= 3:
        return w
    if w.endswith("'s"):
        w = w[:-2]
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "i"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        w = w[:-1]
    for suf in ("ing", "ed"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            base = w[: -len(suf)]
            if any(v in base for v in "aeiouy"):
                if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                    base = base[:-1]  # running -> run, but bill-ing stays bill
                w = base
            break
    if w.endswith("y") and len(w) > 3:
        w = w[:-1] + "i"  # carry ~ carri(es|ed)
    s = _suffix(w, ("ational", "ation", "ement", "ment", "ness", "able", "ible", "ful", "ly"))
    if s and len(w) - len(s) >= 4:
        w = w[: -len(s)] + ("at" if s == "ational" else "")
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def cn_numeral_value(text: str) -> int | None:
    """The value of a Chinese numeral, or None if it isn't one.

    cn_numeral_value("三十六") -> 36; cn_numeral_value("二〇二四") -> 2024
    """
    if not text:
        return None
    if all(c in _CN_DIGITS for c in text):  # digit by digit: 二〇二四
        return int("".join(str(_CN_DIGITS[c]) for c in text)) if len(text) > 1 else _CN_DIGITS[text]
    total, section, digit = 0, 0, 0
    for c in text:
        if c in _CN_DIGITS:
            digit = _CN_DIGITS[c]
        elif c == "万":
            section = (section + digit) * 10000
            total, section, digit = total + section, 0, 0
        elif c in _CN_UNITS:
            section += (digit or 1) * _CN_UNITS[c]
            digit = 0
        else:
            return None
    return total + section + digit


def _numerals(run: str) -> list[str]:
    out: list[str] = []
    for m in _CN_NUMERAL.finditer(run):
        s = m.group()
        if len(s) == 1:
            after = run[m.end() : m.end() + 1]
            if s in "千百万零〇" or after not in _MEASURE:
                continue
        value = cn_numeral_value(s)
        if value is not None:
            out.append(str(value))
    return out


_jieba: Any = None
_jieba_lock = threading.Lock()


def segmenter() -> Any:
    """One jieba.Tokenizer for the process, loaded on first use (about a second)."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import jieba

                jieba.setLogLevel(60)
                tok = jieba.Tokenizer()
                tok.initialize()
                _jieba = tok
    return _jieba


def load_segmenter() -> None:
    """Load jieba's dictionary now rather than at the first Chinese text (about a second of
    CPU): ingestion calls it in a background thread while its first files are parsed."""
    segmenter()


def _cut(run: str) -> list[str]:
    return list(segmenter().cut_for_search(run, HMM=False))


def tokenize(
    text: str, *, bigrams: bool = False, numerals: bool = True, words: bool = True
) -> list[str]:
    """Index terms of `text`: jieba search-mode words, CJK bigrams and numeral values for
    Chinese; stemmed non-stop words and numbers for English. Called for every chunk at ingest.
    `words=False` leaves out jieba's words (and jieba): the terms a text shares with English
    ones are the same.

    tokenize("Carried over 240 hours。年休假十天") -> ["carri", "240", "hour", "年休", "休假",
        "年休假", "十天", "10", "年休", "休假", "假十", "十天"]
    """
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    for m in _RUN.finditer(text):
        run = m.group()
        c = run[0]
        if c.isdigit():
            out.append(run)
        elif "a" <= c <= "z":
            if run not in EN_STOP:
                out.append(stem(run))
        else:
            if words:
                out.extend(w for w in _cut(run) if w not in ZH_STOP)
            if numerals:
                out.extend(_numerals(run))
            if bigrams and len(run) > 2:
                out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out
