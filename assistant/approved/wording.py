"""Whether a question says what an approved phrasing says, in nearly its words: the matcher's
last check (assistant/approved/index.py), after its lexical and dense scores have found a
candidate.

Those scores measure how much two questions share, and a question that shares all but the word
that matters scores high: "How many days of annual leave do I get?" against "How many days of
annual leave can be carried over?" (lexical 0.86, dense 0.91). Serving one question's approved
answer to another is worse than not serving it (the question then goes through retrieval as
any other), so a candidate must also pass this: every content word of each is found in the
other, and both name the same numbers.

- English: a word is found as the same stem (retrieval's index terms) or as a misspelling of
  one, an edit apart with the same first letter and at least four letters ("cary" for "carry",
  "flihgts" for "flights"), two apart from eight letters ("parantal" for "parental"); "paid"
  is not "unpaid", nor "hire" "fire".
- Chinese: a character is found as itself or as another of the same sound (pinyin without
  tones: 年修假 for 年休假, 公伤 for 工伤, the way Chinese is mistyped); 病假 is not 产假.
- Words that carry no content (core/text.py's stop words, and how many / 几 / 多少 / 可以…) are
  left out.

Other phrasings (a paraphrase in other words, the question in the other language) are written
by the admin as the answer's variants.

    same_wording("How many days of annual leave can I cary over?",
                 "How many days of annual leave can be carried over?") -> True
    same_wording("How many days of annual leave do I get?",
                 "How many days of annual leave can be carried over?") -> False
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache, lru_cache

from assistant.retrieve.spelling import misspelt
from core.text import EN_STOP, IDEOGRAPH, ZH_STOP, tokenize

_WORD = re.compile(r"[a-z]+")
# A possessive's "'s": "doctor's" is "doctor", as "doctors" is (straight or curly apostrophe).
_APOSTROPHE = re.compile(r"['’]s\b")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_HAN = re.compile(f"[{IDEOGRAPH}]")
# asking, not content: "how many", "how much"; 几 / 多少 / 可以 / 能 / 有 / 是否 / 请问
EN_ASKING = frozenset({"many", "much"})
ZH_ASKING = frozenset("几多少什么怎样哪吗呢否可以能有请问的了是")
_ZH_SKIP = ZH_ASKING | frozenset(w for w in ZH_STOP if len(w) == 1)


def _flat(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _numbers(text: str) -> frozenset[str]:
    """The numbers a text names, in digits or Chinese numerals (retrieval's numeral terms)."""
    digits = set(_NUMBER.findall(text))
    digits.update(t for t in tokenize(text) if _NUMBER.fullmatch(t))
    return frozenset(digits)


def _words(text: str) -> list[str]:
    """The content words of a lower-cased text: _words("a doctor's note") -> ["doctor", "note"]
    """
    text = _APOSTROPHE.sub("", text)
    return [w for w in _WORD.findall(text) if w not in EN_STOP and w not in EN_ASKING]


@cache
def _stems(word: str) -> frozenset[str]:
    return frozenset(tokenize(word, numerals=False)) or frozenset({word})


def _word_found(word: str, others: list[str]) -> bool:
    """The word is among `others` as the same stem, or as a misspelling of one, word for word
    or stem for stem ("cary" -> "cari" for "carried" -> "carri")."""
    stems = _stems(word)
    return any(stems & _stems(o) or misspelt(word, o)
               or any(misspelt(a, b) for a in stems for b in _stems(o)) for o in others)


@cache
def _sound(char: str) -> str:
    from pypinyin import lazy_pinyin  # its dictionaries load on the first Chinese check

    return lazy_pinyin(char)[0]


def _chars_found(a: Counter[str], b: Counter[str]) -> bool:
    """Every character of `a` is in `b`, or stands for one of `b`'s left over that sounds the
    same (each used once)."""
    missing, spare = a - b, b - a
    for char in missing.elements():
        partner = next((c for c in spare.elements() if _sound(c) == _sound(char)), None)
        if partner is None:
            return False
        spare[partner] -= 1
    return True


@dataclass(frozen=True)
class _Profile:
    """What the check compares of a text."""

    numbers: frozenset[str]
    words: list[str]
    chars: Counter[str]


@lru_cache(maxsize=8192)  # each phrasing is compared with every question that reaches it
def _profile(text: str) -> _Profile:
    flat = _flat(text)
    return _Profile(_numbers(flat), _words(flat),
                    Counter(c for c in _HAN.findall(flat) if c not in _ZH_SKIP))


def same_wording(question: str, phrasing: str) -> bool:
    """Whether `question` says what `phrasing` says in nearly its words (module docstring)."""
    q, p = _profile(question), _profile(phrasing)
    return (q.numbers == p.numbers
            and all(_word_found(w, p.words) for w in q.words)
            and all(_word_found(w, q.words) for w in p.words)
            and _chars_found(q.chars, p.chars) and _chars_found(p.chars, q.chars))
