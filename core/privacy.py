"""Personal numbers in free text, found and masked: Chinese resident ID numbers, mobile and
landline numbers (Chinese and international forms), e-mail addresses and bank card numbers.
Pure functions; what kb keeps or shows admins passes through `mask_personal` when
`privacy.mask` is on (the model and retrieval see the question as asked).

    mask_personal("我的身份证号11010519491231002X，手机13812345678")
        -> "我的身份证号**************002X，手机*******5678"
    mask_personal("Mail zhang.san@example.com about Article 12 (800元, 2024-01-01)")
        -> "Mail z***@example.com about Article 12 (800元, 2024-01-01)"

What counts, and the checks that keep policy numbers (article numbers, amounts, dates, policy
codes) alone:
- resident ID: 18 characters, a plausible region (first digit 1-9) and birth date, and the
  ISO 7064 MOD 11-2 check digit (`id_check_digit`); the old 15-digit form (no check digit) only
  where the 20 characters before it name an ID card (身份证, 证件号, "ID card", "ID no.").
- bank card: 13-19 digits, plain or in groups of four (Amex 4-6-5), a card network's first
  digits (2-series Mastercard, 3-6) and a valid Luhn sum (`luhn_ok`).
- mobile (China): 1[3-9]x and 8 more digits, grouped 3-4-4 or not, +86 / 0086 kept in front.
- landline (China): an area code (010, 02x, 0xxx; bare, or in brackets) and a 7-8 digit local
  number starting 2-9, an extension kept; international: "+", a country code and 8-15 digits
  in all; North American: (415) 555-2671, 415-555-2671.
- e-mail address: the first letter of its local part and the domain stay.
A number must stand alone: no letter or digit touches it, nor a hyphen joined to a letter or
digit (so HR-138-1234-5678, v3.13800000000 stay). The digits of a number are masked but its last
four, its separators are kept; masking masked text changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# A number stands alone: nothing alphanumeric (ASCII) or hyphen-joined touches it, nor a
# decimal point with a digit on its other side.
_BEFORE = r"(?<![0-9A-Za-z])(?<![0-9A-Za-z]-)(?<![0-9]\.)"
_AFTER = r"(?![0-9A-Za-z])(?!-[0-9A-Za-z])(?!\.[0-9])"
_DATE = r"(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])"  # MMDD
_AREA = r"0(?:10|2\d|[3-9]\d{2})"  # Chinese area codes: 010, 02x, 0xxx

_ID18 = re.compile(_BEFORE + rf"(?P<n>[1-9]\d{{5}}(?:18|19|20)\d{{2}}{_DATE}\d{{3}}[\dXx])"
                   + _AFTER)
_ID15 = re.compile(_BEFORE + rf"(?P<n>[1-9]\d{{5}}\d{{2}}{_DATE}\d{{3}})" + _AFTER)
_ID_WORDS = re.compile(r"身份证|身份号|证件号|\bID\s*(?:card|no\.?|number|#)|identity", re.I)
_CARD = re.compile(_BEFORE + r"(?P<n>\d{4}(?:[ -]\d{4}){2,3}(?:[ -]\d{1,3})?"
                   r"|\d{4}[ -]\d{6}[ -]\d{4,5}|\d{13,19})" + _AFTER)
_CARD_NETWORK = re.compile(r"[3-6]|2[2-7]")
_MOBILE = re.compile(_BEFORE + r"(?P<p>(?:\+86|0086|\(\+86\)|（\+86）)[ -]?)?"
                     r"(?P<n>1[3-9]\d(?:[ -]?\d{4}){2})" + _AFTER)
_LANDLINE = re.compile(_BEFORE + rf"(?P<n>(?:\({_AREA}\)|（{_AREA}）|{_AREA}[ -]?)[ ]?"
                       r"[2-9]\d{2,3}[ -]?\d{4})(?P<x>(?:-|转|ext\.?\s?|x)\d{1,6})?" + _AFTER)
_INTERNATIONAL = re.compile(_BEFORE + r"(?P<n>\+\d[\d \-()]{6,22}\d)" + _AFTER)
_NANP = re.compile(_BEFORE + r"(?P<n>(?:\([2-9]\d{2}\)[ ]?|[2-9]\d{2}[-.])[2-9]\d{2}[-.]\d{4})"
                   + _AFTER)
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])(?P<n>[A-Za-z0-9][A-Za-z0-9._%+-]*)@"
                    r"(?P<d>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,})")
_WEIGHTS = [2 ** (17 - i) % 11 for i in range(17)]
_CHECK = "10X98765432"
_KEPT = 4  # digits left at the end of a masked number


def id_check_digit(first17: str) -> str:
    """The ISO 7064 MOD 11-2 check character of an 18-character resident ID number.

    id_check_digit("11010519491231002") -> "X"
    """
    return _CHECK[sum(int(d) * w for d, w in zip(first17, _WEIGHTS, strict=True)) % 11]


def luhn_ok(digits: str) -> bool:
    """Whether a card number's digits pass the Luhn check.

    luhn_ok("4111111111111111") -> True;  luhn_ok("4111111111111112") -> False
    """
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def _hide_digits(text: str, keep: int = _KEPT) -> str:
    """Every digit (and an ID's X) but the last `keep` as "*", separators kept.

    _hide_digits("138-1234-5678") -> "***-****-5678"
    """
    positions = [i for i, c in enumerate(text) if c.isdigit() or c in "Xx"]
    hidden = set(positions[:-keep] if keep else positions)
    return "".join("*" if i in hidden else c for i, c in enumerate(text))


def _is_id18(m: re.Match[str], text: str) -> bool:
    number = m["n"].upper()
    return id_check_digit(number[:17]) == number[17]


def _is_id15(m: re.Match[str], text: str) -> bool:
    return bool(_ID_WORDS.search(text, max(0, m.start() - 20), m.start()))


def _is_card(m: re.Match[str], text: str) -> bool:
    digits = re.sub(r"\D", "", m["n"])
    return 13 <= len(digits) <= 19 and bool(_CARD_NETWORK.match(digits)) and luhn_ok(digits)


def _is_international(m: re.Match[str], text: str) -> bool:
    number = m["n"]
    digits = sum(c.isdigit() for c in number)
    return (8 <= digits <= 15 and number.count("(") == number.count(")")
            and not re.search(r"[ \-]{2}|[()][()]", number))


def _always(m: re.Match[str], text: str) -> bool:
    return True


def _mask_number(m: re.Match[str]) -> str:
    number = m["n"]
    if number.startswith("+"):  # a country code before a separator stays
        code = re.match(r"\+\d{1,3}(?=[ \-(])", number)
        if code:
            return code.group() + _hide_digits(number[code.end():])
    return _hide_digits(number)


def _mask_local_part(m: re.Match[str]) -> str:
    return m["n"][0] + "***"


Check = Callable[[re.Match[str], str], bool]
# (kind, pattern, check, masked form of the `n` group), in the order they are applied: e-mail
# first (a mobile number can be a mailbox's name), then the longer numbers.
_KINDS: list[tuple[str, re.Pattern[str], Check, Callable[[re.Match[str]], str]]] = [
    ("email", _EMAIL, _always, _mask_local_part),
    ("id", _ID18, _is_id18, _mask_number),
    ("id", _ID15, _is_id15, _mask_number),
    ("card", _CARD, _is_card, _mask_number),
    ("mobile", _MOBILE, _always, _mask_number),
    ("phone", _LANDLINE, _always, _mask_number),
    ("phone", _INTERNATIONAL, _is_international, _mask_number),
    ("phone", _NANP, _always, _mask_number),
]


def personal_numbers(text: str) -> list[tuple[str, str]]:
    """The personal numbers in `text` as (kind, as written), in the order they are found:
    kind is "email", "id", "card", "mobile" or "phone".

    personal_numbers("call 010-12345678 or 13812345678")
        -> [("mobile", "13812345678"), ("phone", "010-12345678")]
    """
    found: list[tuple[str, str]] = []
    _scan(text, found)
    return found


def mask_personal(text: str) -> str:
    """`text` with every personal number masked (see the module's docstring).

    mask_personal("卡号 6222 0212 3456 7890 128") -> "卡号 **** **** **** ***0 128"
    """
    return _scan(text, None)


def _scan(text: str, found: list[tuple[str, str]] | None) -> str:
    if not text or not re.search(r"\d{4}|@", text):
        return text
    for kind, pattern, check, masked in _KINDS:
        def replace(m: re.Match[str], kind: str = kind, check: Check = check,
                    masked: Callable[[re.Match[str]], str] = masked, whole: str = text) -> str:
            if not check(m, whole):
                return m.group()
            if found is not None:
                found.append((kind, m.group() if kind == "email" else m["n"]))
            start, end = m.start("n") - m.start(), m.end("n") - m.start()
            return m.group()[:start] + masked(m) + m.group()[end:]

        text = pattern.sub(replace, text)
    return text


def mask_values(value: Any) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with `mask_personal` applied to
    every string in it, keys and numbers left as they are.

    mask_values({"note": "call 13812345678", "n": 13812345678})
        -> {"note": "call *******5678", "n": 13812345678}
    """
    if isinstance(value, str):
        return mask_personal(value)
    if isinstance(value, dict):
        return {k: mask_values(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_values(v) for v in value]
    return value
