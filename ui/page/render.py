"""What the chat shows, as HTML/Markdown strings: answers with [n] links, source cards, the
timings line, what a follow-up was searched for, and a cited PDF page as an image. Every piece
of text from a document, the model or the user is HTML-escaped here before it reaches the page.

    link_citations("5 days [1].", "q7", {1}) -> '5 days <a href="#kb-q7-1" ...>[1]</a>.'
"""

from __future__ import annotations

import html
import logging
import re
import shutil
import subprocess
import urllib.parse
from collections.abc import Collection
from pathlib import Path

from assistant.answer_json import approved_day
from assistant.best_sentence import GAP, blocks, cells, is_row, tidy
from core.types import Answer, Citation, Passage
from ui.i18n import t

logger = logging.getLogger(__name__)

CITE_RE = re.compile(r"\[(\d{1,3})\]")

CSS = """
.kb-cite { font-weight: 600; text-decoration: none; padding: 0 1px; }
.kb-card { border-left: 3px solid var(--color-accent, #f97316); padding: 4px 10px; margin: 6px 0; }
.kb-card mark { background: #fde68a; color: inherit; }
.kb-badge { background: #fee2e2; color: #991b1b; border-radius: 4px; padding: 0 6px;
            font-size: 85%; }
.kb-where { color: var(--body-text-color-subdued, #666); font-size: 90%; }
.kb-notice { color: #92400e; }
.kb-timings { font-size: 85%; color: var(--body-text-color-subdued, #666); }
.kb-approved { background: #dcfce7; color: #166534; border-radius: 4px; padding: 0 6px;
               font-size: 85%; }
.kb-mode { font-size: 85%; color: var(--body-text-color-subdued, #666); margin: 0; }
.kb-searched { font-size: 85%; color: var(--body-text-color-subdued, #666); margin: 0; }
.kb-table { border-collapse: collapse; margin: 4px 0; font-size: 95%; }
.kb-table th, .kb-table td { border: 1px solid var(--border-color-primary, #ddd);
                             padding: 2px 8px; text-align: left; }
.kb-table tr.kb-hit td { background: #fde68a; }
.kb-head { display: block; font-weight: 600; margin-top: 4px; }
"""


def escape(text: str) -> str:
    r"""HTML-escape, newlines as <br>: the chat's Markdown sees one HTML block and leaves it be.

    escape("a < b\n\nc") -> "a &lt; b<br><br>c"
    """
    return html.escape(text, quote=True).replace("\r", "").replace("\n", "<br>")


def link_citations(text: str, key: str, numbers: Collection[int]) -> str:
    """Escape `text` and turn each [n] that has a citation into a link to its source card."""
    parts: list[str] = []
    last = 0
    for match in CITE_RE.finditer(text):
        n = int(match.group(1))
        if n not in numbers:
            continue
        parts.append(escape(text[last:match.start()]))
        parts.append(f'<a href="#kb-{key}-{n}" class="kb-cite" data-n="{n}">[{n}]</a>')
        last = match.end()
    parts.append(escape(text[last:]))
    return "".join(parts)


def table_html(rows: list[str], quote: str = "") -> str:
    """Table rows ("| a | b |") as an HTML table, the first as its header; a Markdown rule row
    ("| --- |") is left out, and the row equal to `quote` is marked.

    table_html(["| a |", "| --- |", "| x |"]) -> '<table class="kb-table"><tr><th>a</th></tr>
        <tr><td>x</td></tr></table>'
    """
    body = [r for r in rows if not all(set(c) <= set("-: ") for c in cells(r))]
    out = ['<table class="kb-table">']
    for i, row in enumerate(body):
        tag = "th" if i == 0 else "td"
        hit = ' class="kb-hit"' if i and quote and row.strip() == quote.strip() else ""
        out.append(f"<tr{hit}>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells(row))
                   + "</tr>")
    return "".join(out) + "</table>"


def answer_text_html(text: str, key: str, numbers: Collection[int]) -> str:
    """An answer's text: runs of table rows as tables, the other lines escaped with each [n]
    linked to its source card."""
    parts: list[str] = []
    rows: list[str] = []
    for line in text.split("\n"):
        if is_row(line):
            rows.append(line)
            continue
        if rows:
            parts.append(table_html(rows))
            rows = []
        parts.append(link_citations(line, key, numbers) + "<br>")
    if rows:
        parts.append(table_html(rows))
    return "".join(parts).removesuffix("<br>")


def passage_body(text: str, section: tuple[str, ...], quote: str) -> str:
    """A passage as a source card shows it: its heading line as a heading, its tables as tables,
    its sentences as text, and only `quote` (what answers) marked."""
    quote = quote.split(GAP, 1)[0]  # an older answer's quote: its best sentence, then the rest
    parts: list[str] = []
    for kind, lines in blocks(text, section):
        if kind == "heading":
            parts.append(f'<span class="kb-head">{html.escape(lines[0])}</span>')
        elif kind == "table":
            parts.append(table_html(lines, quote))
        else:
            parts.append(highlight("".join(lines), tidy(quote)) + "<br>")
    return "".join(parts).removesuffix("<br>")


def highlight(text: str, quote: str) -> str:
    """Escape `text` with `quote` (when it occurs) wrapped in <mark>."""
    quote = quote.strip()
    at = text.find(quote) if quote else -1
    if at < 0:
        return escape(text)
    end = at + len(quote)
    return escape(text[:at]) + "<mark>" + escape(text[at:end]) + "</mark>" + escape(text[end:])


def where(file: str, page: int | None, section: str, lang: str, label: str = "") -> str:
    """`where("leave.pdf", 3, "", "en")` -> "leave.pdf · page 3";
    with the printed label "i": "leave.pdf · page 3 (printed i)"."""
    bits = [file]
    if page:
        printed = f" ({t('printed', lang, label=label)})" if label else ""
        bits.append(t("page_n", lang, n=page) + printed)
    if section:
        bits.append(f"{t('section', lang)}: {section}")
    return " · ".join(bits)


def source_card(citation: Citation, passage: Passage | None, key: str, lang: str) -> str:
    """One card: file, page or section path, the passage with the quote marked, badges."""
    text = passage.text if passage else citation.quote
    section = citation.section or (passage.section_path if passage else "")
    headings = passage.section if passage else ()
    badges = ""
    if passage is not None and passage.superseded:
        badges += f' <span class="kb-badge">{html.escape(t("superseded", lang))}</span>'
    if passage is not None and passage.from_ocr:
        badges += f' <span class="kb-badge">{html.escape(t("ocr", lang))}</span>'
    if citation.review_due:
        note = t("review_due", lang, day=citation.review_due)
        badges += f' <span class="kb-badge kb-review">{html.escape(note)}</span>'
    if not citation.supported:
        badges += f' <span class="kb-badge">{html.escape(t("unsupported", lang))}</span>'
    place = where(citation.file, citation.page, section, lang, citation.page_label)
    opens = ""
    if not citation.page and citation.chunk_id:  # a Word passage: its section, in a new tab
        url = html.escape(section_url(citation.chunk_id, citation.quote[:SECTION_QUOTE], lang))
        opens = (f' · <a class="kb-open" href="{url}" target="_blank" rel="noopener">'
                 f'{html.escape(t("open_section", lang))}</a>')
    return (
        f'<div class="kb-card" id="kb-{key}-{citation.n}">'
        f"<b>[{citation.n}] {html.escape(citation.file)}</b>{badges}<br>"
        f'<span class="kb-where">{html.escape(place)}'
        f"</span>{opens}<br>{passage_body(text, headings, citation.quote)}</div>"
    )


def timings_line(timings: dict[str, float], lang: str) -> str:
    values = {k: (f"{timings[k]:.0f}" if k in timings else "–")
              for k in ("retrieve", "pack", "first_token", "total")}
    return t("timings", lang, **values)


def searched_line(searched_for: str, asked: str, lang: str) -> str:
    """The line under an answer that says what retrieval searched for, when that was not the
    question asked (a follow-up read with its history); "" otherwise. Escaped: it is user text.

    searched_line("And <b>? (leave)", "And <b>?", "en")
        -> '<p class="kb-searched">Searched for: And &lt;b&gt;? (leave)</p>'
    """
    if not searched_for.strip() or searched_for.split() == asked.split():
        return ""
    return f'<p class="kb-searched">{escape(t("searched_for", lang, text=searched_for))}</p>'


def mode_label(answer: Answer, lang: str) -> str:
    """The line that says what made an answer: the model, the passages in its place, or an
    admin's approval (who, when); "" for an abstention, whose text says it.

    mode_label(Answer("…", mode="retrieval_only"), "en")
        -> "Retrieval only: the language model is unavailable"
    """
    if answer.abstained or answer.mode == "abstained":
        return ""
    if answer.mode == "approved":  # a resumed conversation keeps the mode, not who approved it
        return t("approved_answer", lang) if answer.approved is None else t(
            "approved_by", lang, name=answer.approved.author,
            day=approved_day(answer.approved.approved_at))
    return t(answer.mode, lang) if answer.mode in ("generated", "retrieval_only",
                                                   "fallback") else ""


def answer_html(answer: Answer, key: str, lang: str, asked: str = "") -> str:
    """The finished answer as the chat shows it; `asked` is the question, for the searched-for
    line (shown when retrieval searched for something else)."""
    by_chunk = {p.chunk_id: p for p in answer.passages}
    mode = "abstained" if answer.abstained else answer.mode
    lines: list[str] = [f'<div class="kb-answer" data-mode="{html.escape(mode)}">']
    if label := mode_label(answer, lang):  # every answer says which mode made it
        css = {"generated": "kb-mode", "approved": "kb-approved"}.get(mode, "kb-badge")
        lines.append(f'<p class="{css}">{html.escape(label)}</p>')
    if answer.notice and mode == "generated":
        lines.append(f'<p class="kb-notice">{escape(answer.notice)}</p>')
    # An abstention's text names the nearest documents itself; they open under "view source".
    numbers = {c.n for c in answer.citations}
    lines.append(f'<div class="kb-text">{answer_text_html(answer.answer, key, numbers)}</div>')
    if answer.unverified and mode == "generated":
        lines.append(f'<p class="kb-notice">{html.escape(t("unverified", lang))}</p>')
    if searched := searched_line(answer.searched_for, asked, lang):
        lines.append(searched)
    if answer.citations:
        cards = "".join(source_card(c, by_chunk.get(c.chunk_id), key, lang)
                        for c in answer.citations)
        lines.append(f'<details open><summary>{html.escape(t("sources", lang))}</summary>'
                     f"{cards}</details>")
    if mode == "fallback" and answer.raw_answer:
        lines.append(f'<details class="kb-model-answer"><summary>'
                     f'{html.escape(t("model_answer", lang))}</summary>'
                     f"<p>{escape(answer.raw_answer)}</p></details>")
    if answer.timings_ms or answer.notice:
        # retrieval-only: the reason names internal URLs and errors (the log has it); a
        # fallback's reason is one of the assistant's fixed sentences
        why = ""
        if answer.notice and answer.mode == "retrieval_only":
            why = f"<br>{escape(t('model_down', lang))}"
        elif answer.notice and answer.mode != "generated":
            why = f"<br>{escape(answer.notice)}"
        summary = html.escape(t("details", lang))
        line = html.escape(timings_line(answer.timings_ms, lang))
        lines.append(f'<details class="kb-timings"><summary>{summary}</summary>{line}{why}'
                     "</details>")
    lines.append("</div>")
    return "\n".join(lines)


def streaming_html(text: str) -> str:
    """Answer text while it streams (citation links come with the finished answer)."""
    return f"<p>{escape(text)}</p>"


def passage_html(passage: Passage, quote: str, lang: str, note: str = "") -> str:
    """The "view source" text: where the passage is, then the passage with the quote marked."""
    p = passage
    head = html.escape(where(p.file, p.page, p.section_path, lang, p.page_label))
    badge = (f' <span class="kb-badge">{html.escape(t("superseded", lang))}</span>'
             if passage.superseded else "")
    if passage.from_ocr:
        badge += f' <span class="kb-badge">{html.escape(t("ocr", lang))}</span>'
    extra = f'<p class="kb-notice">{html.escape(note)}</p>' if note else ""
    return (f'<div class="kb-card" id="kb-view"><b>{head}</b>{badge}{extra}'
            f"<div>{passage_body(passage.text, passage.section, quote)}</div></div>")


def render_pdf_page(pdf: Path, page: int, out_dir: Path, dpi: int = 80) -> Path | None:
    """The page as a PNG through poppler's `pdftoppm`; None when it is not installed or fails."""
    exe = shutil.which("pdftoppm")
    if exe is None:
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{abs(hash((str(pdf), pdf.stat().st_mtime))):x}-p{page}"
    target = stem.with_suffix(".png")
    if target.exists():
        return target
    cmd = [exe, "-f", str(page), "-l", str(page), "-r", str(dpi), "-png", "-singlefile",
           str(pdf), str(stem)]
    try:
        subprocess.run(cmd, check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("pdftoppm could not render %s page %d (%s)", pdf.name, page, exc)
        return None
    logger.info("rendered %s page %d", pdf.name, page)
    return target if target.exists() else None


# --- the section view of a Word citation -----------------------------------------------------
SECTION_CSS = """
body { font: 15px/1.6 system-ui, "Noto Sans CJK SC", sans-serif; margin: 12px 16px;
       color: #1f2937; }
header { border-bottom: 1px solid #e5e7eb; margin-bottom: 8px; }
.kb-where { color: #6b7280; font-size: 90%; }
h2, h3, h4 { margin: 14px 0 4px; } h2 { font-size: 118%; } h3 { font-size: 108%; }
h4 { font-size: 100%; }
.kb-in-section { border-left: 3px solid #fcd34d; padding-left: 8px; }
#kb-cited { background: #fffbeb; border-left: 3px solid #f97316; padding: 2px 8px;
            scroll-margin-top: 24px; }
#kb-cited mark { background: #fde68a; color: inherit; }
p { margin: 4px 0; }
"""


SECTION_QUOTE = 500  # characters of the cited words sent along to be marked


def section_url(chunk_id: str, quote: str, lang: str) -> str:
    """The app-relative URL of a passage's section view, scrolled to it, `quote` to be marked.

    section_url("c 1", "5 days", "en") -> "section/c%201?lang=en&q=5%20days#kb-cited"
    """
    url = f"section/{urllib.parse.quote(chunk_id, safe='')}?lang={lang}"
    if quote:
        url += "&q=" + urllib.parse.quote(quote, safe="")
    return url + "#kb-cited"


def section_html(passages: list[Passage], cited_id: str, quote: str, lang: str) -> str:
    """A whole HTML page: the passages of the cited section's chapter in document order, the
    headings as they change, the cited section edged and the cited passage (`id="kb-cited"`,
    which the view scrolls to) with `quote` marked. Everything from the document is escaped."""
    cited = next((p for p in passages if p.chunk_id == cited_id), None)
    first = cited or (passages[0] if passages else None)
    name = html.escape(first.title or first.file) if first else ""
    place = html.escape(where(first.file, None, first.section_path, lang)) if first else ""
    body: list[str] = [f'<header><b>{name}</b><br><span class="kb-where">{place}</span>'
                       "</header>"]
    shown: tuple[str, ...] = ()
    section = cited.section if cited else ()
    for p in passages:
        if p.section != shown:
            same = 0
            while same < min(len(shown), len(p.section)) and shown[same] == p.section[same]:
                same += 1
            for level in range(same, len(p.section)):
                tag = f"h{min(level + 2, 4)}"
                body.append(f"<{tag}>{html.escape(p.section[level])}</{tag}>")
            shown = p.section
        edged = bool(section) and p.section[:len(section)] == section
        css = ' class="kb-in-section"' if edged else ""
        if p.chunk_id == cited_id:
            label = html.escape(t("cited_here", lang))
            body.append(f'<div id="kb-cited" aria-label="{label}"><p>{highlight(p.text, quote)}'
                        "</p></div>")
        else:
            body.append(f"<div{css}><p>{escape(p.text)}</p></div>")
    title = html.escape(t("section_view", lang))
    return (f'<!doctype html><html lang="{"zh" if lang == "zh" else "en"}"><head>'
            f'<meta charset="utf-8"><title>{title}</title><style>{SECTION_CSS}</style></head>'
            f"<body>{''.join(body)}</body></html>")
