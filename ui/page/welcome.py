"""The empty chat: what the library holds for this person, and example questions from it, in
the page's language. The examples are the approved answers' questions the person may be
served, then one question per document from a section heading of it; clicking one asks it.

    example_questions([("Leave Policy", "2.4 Carry-over")], [], "en")
        -> ["What does Leave Policy say about carry-over?"]
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import gradio as gr

from core.types import ApprovedAnswer, User
from ui.handlers import Handlers
from ui.i18n import t

MOST = 4  # example questions shown
_NUMBERING = re.compile(
    r"^\s*(?:[\d.]+|第[一二三四五六七八九十百]+[章节条]|[一二三四五六七八九十]+、)\s*")


def heading_words(heading: str) -> str:
    """A section heading without its numbering: heading_words("2.4 Carry-over") -> "Carry-over";
    heading_words("第三章住宿费") -> "住宿费"."""
    return _NUMBERING.sub("", heading).strip() or heading.strip()


def example_questions(sections: Sequence[tuple[str, str]], approved: Sequence[str], lang: str,
                      most: int = MOST) -> list[str]:
    """Up to `most` questions: the approved ones first, then one per (document title, section
    heading), asked in `lang`."""
    asked = list(dict.fromkeys(q.strip() for q in approved if q.strip()))[:most]
    for title, heading in sections:
        if len(asked) >= most:
            break
        words = heading_words(heading)
        if lang == "zh":
            asked.append(f"《{title}》关于“{words}”有什么规定？")
        else:
            asked.append(f"What does {title} say about {words[:1].lower() + words[1:]}?")
    return asked


def welcome_html(titles: Sequence[str], lang: str) -> str:
    """What the library holds, as the empty chat shows it (titles escaped)."""
    if not titles:
        return f"<p>{html.escape(t('library_empty', lang))}</p>"
    shown = "、".join(titles[:8]) if lang == "zh" else ", ".join(titles[:8])
    more = "…" if len(titles) > 8 else ""
    return (f"<p><b>{html.escape(t('library_holds', lang, n=len(titles)))}</b> "
            f"{html.escape(shown + more)}</p><p>{html.escape(t('library_try', lang))}</p>")


class WelcomeHandlers(Handlers):
    """The empty chat's welcome, for the person asking."""

    def welcome(self, lang: str, request: gr.Request) -> dict[str, Any]:
        """The chat's placeholder (what the library holds) and its example questions."""
        user = self.who(request)
        records = sorted((r for r in self.store.ledger.documents()
                          if r.searchable and set(user.groups) & set(r.meta.groups)),
                         key=lambda r: (r.meta.lang != lang, r.meta.title or r.meta.path))
        titles = [r.meta.title or r.meta.path for r in records]
        visible = {r.meta.id for r in records}
        approved = [a.question for a in self._approved_for(user, visible) if a.lang == lang]
        sections = [(r.meta.title or r.meta.path, heading) for r in records[:MOST]
                    if (heading := self._a_heading(r.meta.id))]
        examples = [{"text": q} for q in example_questions(sections, approved, lang)]
        return gr.update(placeholder=welcome_html(titles, lang), examples=examples or None)

    def _a_heading(self, doc_id: str) -> str:
        """A section heading below the document's title, from its first passages ("" if none)."""
        snap = self.assistant.retriever.snapshot()
        for chunk_id in self.store.ledger.chunk_ids(doc_id)[:8]:
            row = snap.row_of.get(chunk_id)
            if row is not None and len(snap.sections[row]) >= 2:
                return str(snap.sections[row][-1])
        return ""

    def _approved_for(self, user: User, visible: set[str]) -> list[ApprovedAnswer]:
        """The active approved answers the person may be served: one of their groups, and
        every cited document one they see."""
        return [a for a in self.store.ledger.approved_answers("active")
                if set(user.groups) & set(a.groups)
                and all(c.doc_id in visible for c in a.citations)]
