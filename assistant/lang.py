"""Which language a question is in: Chinese when CJK characters make up a fair share of its
letters, else English. Decides the prompt template, the canned texts and the fusion weights.

    detect_lang("出差住宿标准是多少？") -> "zh"
"""

from __future__ import annotations

import re
from typing import Literal

Lang = Literal["zh", "en"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")

# One CJK character carries about as much as a short English word (~3 letters), so a share of
# 0.25 of letters means roughly half of the "words" are Chinese.
ZH_SHARE = 0.25


def cjk_share(text: str) -> float:
    """The share of CJK characters among CJK characters and Latin letters (0.0 for neither).

    cjk_share("PIV卡") -> 0.25
    """
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def detect_lang(text: str) -> Lang:
    """Return "zh" when CJK characters are at least a quarter of the letters, else "en".

    detect_lang("How many days of annual leave?") -> "en"
    """
    return "zh" if cjk_share(text) >= ZH_SHARE else "en"
