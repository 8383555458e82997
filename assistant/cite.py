"""Citations in a generated answer: find the [n] markers, resolve them to the packed passages,
and check that each cited sentence is supported by its passage.

Markers: [1], [1, 2], [1][2], 【1】, [1-3] (and full-width commas). A marker right after a
sentence end ("… per pay period. [1]") belongs to the sentence before it. A sentence is
supported by passage n when the numbers it states all occur in the passage and either enough
of its terms do (lexical support >= `min_support`) or an injected `similarity` says so
(>= `min_similarity`). Unsupported and out-of-range numbers are removed from the text; an
answer left without a supported citation is flagged unverified.

    verify("年假5天[1]。", [Passage(..., text="职工年休假5天。")]).citations[0].quote
        -> "职工年休假5天。"
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.text import split_sentences, tokenize
from core.types import Citation, Passage

Similarity = Callable[[str, str], float]

MAX_RANGE = 20  # [1-999] is not a citation range
MIN_CLAIM_TERMS = 3  # "Yes." or "根据规定：" states nothing to attribute
CJK_ENDS = "。！？；…：）」』”"
_MARKER = re.compile(r"[\[【]\s*(\d{1,3}(?:\s*[,，、;；\-–~～]\s*\d{1,3})*)\s*[\]】]")
_SEP = re.compile(r"\s*([,，、;；\-–~～])\s*")


@dataclass(frozen=True)
class Marker:
    """One bracketed marker: its span in the answer and the passage numbers it names."""

    start: int
    end: int
    numbers: tuple[int, ...]


@dataclass(frozen=True)
class Verified:
    """The answer with unsupported markers removed, its citations (one per passage number, in
    order of first use) and whether none of them is supported."""

    text: str
    citations: list[Citation]
    unverified: bool


def parse_markers(answer: str) -> list[Marker]:
    """Every citation marker in `answer`, ranges expanded.

    parse_markers("见[1, 3]和【2】[4-5]") -> [Marker(1, 7, (1, 3)), Marker(8, 11, (2,)),
                                            Marker(11, 16, (4, 5))]
    """
    out: list[Marker] = []
    for m in _MARKER.finditer(answer):
        parts = _SEP.split(m.group(1))  # numbers at even places, separators between
        numbers: list[int] = [int(parts[0])]
        for sep, num in zip(parts[1::2], parts[2::2], strict=True):
            n = int(num)
            if sep in "-–~～" and numbers[-1] < n <= numbers[-1] + MAX_RANGE:
                numbers.extend(range(numbers[-1] + 1, n + 1))
            else:
                numbers.append(n)
        out.append(Marker(m.start(), m.end(), tuple(dict.fromkeys(numbers))))
    return out


def _claims(answer: str, markers: Sequence[Marker]) -> list[str]:
    """For each marker, the sentence it cites, with all markers taken out."""
    bounds: list[tuple[int, int]] = []
    pos = 0
    for s in split_sentences(answer):
        start = answer.find(s, pos)
        bounds.append((start, start + len(s)))
        pos = start + len(s)
    stripped = [_MARKER.sub("", answer[a:b]).strip() for a, b in bounds]
    claims: list[str] = []
    for m in markers:
        i = next((k for k, (a, b) in enumerate(bounds) if a <= m.start < b), len(bounds) - 1)
        # "… period. [1] Next" -> the marker opens sentence i but cites sentence i-1
        while i > 0 and not _MARKER.sub("", answer[bounds[i][0] : m.start]).strip():
            i -= 1
            if stripped[i]:
                break
        claims.append(stripped[i] if bounds else "")
    return claims


def _numbers(tokens: Sequence[str]) -> set[str]:
    return {t for t in tokens if t[0].isdigit()}


def lexical_support(claim: str, passage: str) -> tuple[float, bool]:
    """The share of the claim's terms found in the passage, and whether every number the
    claim states is in the passage.

    lexical_support("年假5天", "职工年休假5天。") -> (0.5, True)
    """
    ct = set(tokenize(claim, bigrams=True))
    pt = set(tokenize(passage, bigrams=True))
    if not ct:
        return 1.0, True
    return len(ct & pt) / len(ct), _numbers(list(ct)) <= pt


def best_quote(claim: str, passage: str) -> str:
    """The passage's sentence sharing the most terms with the claim (the first on ties).

    best_quote("5 days", "Intro. You get 5 days. Bye.") -> "You get 5 days."
    """
    ct = set(tokenize(claim, bigrams=True))
    best, best_score = passage.strip(), -1
    for s in split_sentences(passage):
        score = len(ct & set(tokenize(s, bigrams=True)))
        if score > best_score:
            best, best_score = s.strip(), score
    return best


def attribute(answer: str, passages: Sequence[Passage], *, min_support: float = 0.5) -> str:
    """Add a marker to each sentence that has none but that a passage supports (the passage
    with the most support, numbers included). Small models often state a passage's fact and
    forget the [n]; the reader still gets the source. `verify` then checks it like any other.

    attribute("You get 5 days.", [Passage(..., text="Staff get 5 days.")]) -> "You get 5 days. [1]"
    """
    if not passages:
        return answer
    out: list[str] = []
    pos = 0
    for sentence in split_sentences(answer):
        start = answer.find(sentence, pos)
        out.append(answer[pos:start])
        pos = start + len(sentence)
        claim = sentence.strip()
        if _MARKER.search(sentence) or len(tokenize(claim)) < MIN_CLAIM_TERMS:
            out.append(sentence)
            continue
        best, best_support = 0, min_support
        for n, p in enumerate(passages, start=1):
            support, numbers_ok = lexical_support(claim, p.text)
            if numbers_ok and support >= best_support and (best == 0 or support > best_support):
                best, best_support = n, support
        body, trailing = sentence.rstrip(), sentence[len(sentence.rstrip()) :]
        gap = "" if body[-1] in CJK_ENDS else " "
        out.append(f"{body}{gap}[{best}]{trailing}" if best else sentence)
    out.append(answer[pos:])
    return "".join(out)


def verify(
    answer: str,
    passages: Sequence[Passage],
    *,
    min_support: float = 0.5,
    min_similarity: float = 0.75,
    similarity: Similarity | None = None,
) -> Verified:
    """Resolve and check the answer's citations against the packed passages ([1] = first).

    verify("5 days [1] [9].", [p]) -> Verified(text="5 days [1].", citations=[Citation(1, …)],
                                              unverified=False)
    """
    markers = parse_markers(answer)
    claims = _claims(answer, markers)
    found: dict[int, Citation] = {}
    best_support: dict[int, float] = {}
    supported: set[int] = set()
    keep: list[tuple[int, ...]] = []
    for marker, claim in zip(markers, claims, strict=True):
        kept: list[int] = []
        for n in marker.numbers:
            if not 1 <= n <= len(passages):
                continue
            p = passages[n - 1]
            support, numbers_ok = lexical_support(claim, p.text)
            quote = best_quote(claim, p.text)
            ok = numbers_ok and (
                support >= min_support
                or (similarity is not None and similarity(claim, quote) >= min_similarity)
            )
            if ok:
                kept.append(n)
                supported.add(n)
            rank = support + (1.0 if ok else 0.0)
            if n not in found or rank > best_support[n]:
                found[n] = _citation(n, p, quote)
                best_support[n] = rank
        keep.append(tuple(kept))
    text = _rewrite(answer, markers, keep)
    citations = [dataclasses.replace(c, supported=c.n in supported) for c in found.values()]
    return Verified(text, citations, unverified=not any(c.supported for c in citations))


def _citation(n: int, p: Passage, quote: str) -> Citation:
    """Citation [n] of passage `p` by `quote`; a passage merged from chunks of several pages
    cites the quoted chunk's page."""
    page = p.page_at(max(p.text.find(quote), 0))
    if page != p.page:
        p = dataclasses.replace(p, page=page, page_end=page)
    return Citation(
        n=n,
        file=p.file,
        page=p.page,
        section=p.section_path,
        quote=quote,
        chunk_id=p.chunk_id,
        page_label=p.page_label,
        review_due=p.review_due,
    )


def _rewrite(answer: str, markers: Sequence[Marker], keep: Sequence[tuple[int, ...]]) -> str:
    """`answer` with each marker replaced by its kept numbers as [a][b], or removed."""
    out: list[str] = []
    pos = 0
    for marker, numbers in zip(markers, keep, strict=True):
        before = answer[pos : marker.start]
        if not numbers:
            before = before.rstrip(" ")
        out.append(before)
        out.append("".join(f"[{n}]" for n in numbers))
        pos = marker.end
    out.append(answer[pos:])
    return "".join(out)
