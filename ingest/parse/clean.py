"""Text clean-up shared by the PDF and DOCX parsers: pure functions of their inputs.

None of them drops or reorders non-whitespace text, except `strip_running_lines` (which removes
whole header/footer lines) and `join_lines` (which drops the hyphen of a word split across a
line break when the document itself spells the word unbroken elsewhere).

    remove_cjk_spaces("请 假 制 度") -> "请假制度"
    join_lines(["Annual leave ac-", "crues each pay period."], {"accrues"}) -> "Annual leave accrues each pay period."
"""  # noqa: E501

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Sequence

from core.text import CJK

_CJK_SPACE = re.compile(rf"(?<=[{CJK}])[^\S\n]+(?=[{CJK}0-9])|(?<=[0-9])[^\S\n]+(?=[{CJK}])")
_SPACES = re.compile(r"[^\S\n]+")
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
_HYPHEN_END = re.compile(r"([A-Za-z]+)-$")
_LOWER_START = re.compile(r"^([a-z]+)")
_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"^[ivxl]+$")
_ALL_SPACE = re.compile(r"\s+")

# A line that starts a new paragraph whatever the line before it: bullets, numbered items,
# Chinese article/chapter openers ("第十条", "（三）", "二、").
_ITEM_START = re.compile(
    r"^(?:[•●○◦▪■□◆◇►▶✓✔\-–—*·]\s?"
    r"|\(?\d{1,3}[.)、](?!\d)"
    r"|[（(][一二三四五六七八九十百零〇\d]+[）)]"
    r"|第[一二三四五六七八九十百千零〇\d]+[编章节条款]"
    r"|[一二三四五六七八九十]+、"
    r"|[a-zA-Z][.)]\s)"
)


def remove_cjk_spaces(text: str) -> str:
    """Drop the spaces extraction puts between CJK characters, and between CJK and digits.

    remove_cjk_spaces("请 假 制 度") -> "请假制度"
    remove_cjk_spaces("（2018 年修正）") -> "（2018年修正）"
    remove_cjk_spaces("use HR Links 系统") -> "use HR Links 系统"
    """
    return _CJK_SPACE.sub("", text)


def clean_text(text: str) -> str:
    """NFC, runs of spaces and tabs to one space, CJK spaces removed, ends stripped.

    clean_text(" 第 一 条\u3000总则 ") -> "第一条总则"
    """
    text = unicodedata.normalize("NFC", text)
    return remove_cjk_spaces(_SPACES.sub(" ", text)).strip()


def compact(text: str) -> str:
    """The text with every whitespace character removed (how quotes and headings are compared).

    compact("Annual  leave\n") -> "Annualleave"
    """
    return _ALL_SPACE.sub("", text)


def display_width(line: str) -> int:
    """Width of a line in half-width columns: CJK and full-width characters count two.

    display_width("ab请假") -> 6
    """
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def word_vocabulary(text: str) -> tuple[set[str], set[str]]:
    """Lower-cased plain words and hyphenated compounds of `text`, for `join_lines`.

    word_vocabulary("Opt-in to accrue") -> ({"to", "accrue"}, {"opt-in"})
    """
    words: set[str] = set()
    compounds: set[str] = set()
    for match in _WORD.finditer(text):
        word = match.group().lower()
        (compounds if "-" in word else words).add(word)
    return words, compounds


def _join_pair(left: str, right: str, words: Collection[str], compounds: Collection[str]) -> str:
    hyphen = _HYPHEN_END.search(left)
    if hyphen is None:
        return f"{left} {right}"
    tail = _LOWER_START.match(right)
    if tail is not None:
        head, rest = hyphen.group(1).lower(), tail.group(1)
        if f"{head}{rest}" in words and f"{head}-{rest}" not in compounds:
            return left[:-1] + right
    return left + right


def join_lines(
    lines: Sequence[str], words: Collection[str] = (), compounds: Collection[str] = ()
) -> str:
    """Join wrapped lines into one paragraph.

    A word split by a hyphen at a line end is re-joined: without the hyphen when `words` (the
    document's own vocabulary) has the unbroken word and `compounds` lacks the hyphenated one,
    else keeping the hyphen. CJK lines are joined without a space.

    join_lines(["Annual leave ac-", "crues each pay period."], {"accrues"}) -> "Annual leave accrues each pay period."
    join_lines(["opt-", "in via HRLinks"]) -> "opt-in via HRLinks"
    join_lines(["劳动合同期满或者当事人约定的", "劳动合同终止"]) -> "劳动合同期满或者当事人约定的劳动合同终止"
    """  # noqa: E501
    text = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        text = _join_pair(text, line, words, compounds) if text else line
    return clean_text(text)


def starts_item(line: str) -> bool:
    """Whether a line opens a new paragraph by its look (bullet, numbered item, Chinese article).

    starts_item("• Annual Leave") -> True
    starts_item("第十条 国家通过促进经济") -> True
    starts_item("the end of the leave year") -> False
    """
    return _ITEM_START.match(line.lstrip()) is not None


def running_key(line: str) -> str:
    """What a header or footer line has in common across pages: digits and case ignored.

    running_key("Page 3 of 12") -> "page#of#"
    running_key(" - iv - ") -> "-#-"
    """
    key = compact(line).lower()
    if _ROMAN.match(key.strip("-–—.|")):
        key = key.replace(key.strip("-–—.|"), "#")
    return _DIGITS.sub("#", key)


def strip_running_lines(
    pages: Sequence[Sequence[str]], depth: int = 4, min_pages: int = 3, max_len: int = 120
) -> list[list[str]]:
    """Remove running headers and footers: lines among the first or last `depth` lines of a page
    whose `running_key` recurs at that edge on at least `min_pages` pages and on at least 40% of
    the pages between its first and last occurrence (so chapter headers count too).

    strip_running_lines([["ACME", "a"], ["ACME", "b"], ["ACME", "c"]]) -> [["a"], ["b"], ["c"]]
    """
    edges: list[tuple[list[str], list[str]]] = []
    seen_at: dict[tuple[str, str], list[int]] = {}
    for number, lines in enumerate(pages):
        keys = [running_key(line) for line in lines]
        top, bottom = keys[:depth], keys[-depth:] if len(keys) > depth else []
        edges.append((top, bottom))
        for edge, edge_keys in (("top", top), ("bottom", bottom)):
            for key in set(edge_keys):
                if key and len(key) <= max_len:
                    seen_at.setdefault((edge, key), []).append(number)
    running = {
        found
        for found, where in seen_at.items()
        if len(where) >= min_pages and len(where) >= 0.4 * (where[-1] - where[0] + 1)
    }
    if not running:
        return [list(lines) for lines in pages]
    out: list[list[str]] = []
    for lines, (top, bottom) in zip(pages, edges, strict=True):
        drop = {i for i, key in enumerate(top) if ("top", key) in running}
        start = len(lines) - len(bottom)
        drop |= {start + i for i, key in enumerate(bottom) if ("bottom", key) in running}
        out.append([line for i, line in enumerate(lines) if i not in drop])
    return out


def typical_width(lines: Sequence[str]) -> int:
    """The width of a full line: the 90th percentile of the lines' display widths.

    typical_width(["a" * 80] * 9 + ["short"]) -> 80
    """
    widths = sorted(display_width(line.strip()) for line in lines if line.strip())
    if not widths:
        return 0
    return widths[min(len(widths) - 1, int(len(widths) * 0.9))]
