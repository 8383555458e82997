"""An Answer as every platform's card shows it (`reply_for`), and the notices kb posts instead
of an answer, in the asker's language (`notice`). Links open the cited PDF page or Word section
in the app (`/page/...`, `/section/...`, absolute from `ui.public_url`), which checks the
reader's sign-in and groups again; without `ui.public_url` a source is named, not linked.

    reply_for(answer, "en", "https://kb.example.com").sources[0]
        -> Source(1, "leave.pdf p.3", "https://kb.example.com/page/c1?q=...")
"""

from __future__ import annotations

from assistant.answer_json import approved_day
from core.types import Answer, Citation
from ui.api.channels.base import Reply, Source
from ui.api.openai_api import link
from ui.i18n import t

NOTICES = {
    "busy": ("Too many questions at once: please ask again in a few seconds.",
             "当前提问人数过多，请几秒后再问。"),
    "slow_down": ("Too many questions from here in a minute: please ask again shortly.",
                  "一分钟内提问过多，请稍后再问。"),
    "sign_in": ("kb does not know who you are here yet: ask on the page, signed in: {url}",
                "kb 尚未识别您的身份：请登录网页后提问：{url}"),
    "failed": ("The answer failed on the server; an administrator can see why in its log.",
               "服务器未能生成回答；管理员可在日志中查看原因。"),
    "empty": ("Ask a policy question, e.g. “How many days of annual leave do I get?”",
              "请提出制度问题，例如“年假有几天？”"),
    "rate": ("Was this answer helpful?", "这个回答有帮助吗？"),
}


def notice(key: str, lang: str, **values: str) -> str:
    """One of NOTICES in `lang` (English unless "zh").

        notice("sign_in", "en", url="https://kb.example.com") -> "kb does not know ... example.com"
    """
    en, zh = NOTICES[key]
    return (zh if lang == "zh" else en).format(**values)


def label(c: Citation) -> str:
    """Where a citation is: its file, page (and printed label) or Word section.

        label(Citation(1, "leave.pdf", 3, "", "…")) -> "leave.pdf p.3"
    """
    where = f" p.{c.page}" if c.page else ""
    where += f" ({c.page_label})" if c.page and c.page_label else ""
    where += f" § {c.section}" if c.section and not c.page else ""
    return c.file + where


def mode_line(answer: Answer, lang: str) -> str:
    """How the answer was made, as the page says it: approved (by whom, when), generated,
    retrieval only or passages instead of the model's answer; "" for an abstention."""
    mode = "abstained" if answer.abstained else answer.mode
    if mode == "approved" and answer.approved is not None:
        return t("approved_by", lang, name=answer.approved.author,
                 day=approved_day(answer.approved.approved_at))
    if mode in ("generated", "retrieval_only", "fallback"):
        return t(mode, lang)
    return ""


def reply_for(answer: Answer, lang: str, public_url: str) -> Reply:
    """The card's content of a finished, recorded answer: its text, the sources that kept
    their [n] marker (linked under `public_url`, when set), how it was made."""
    base = public_url.rstrip("/")
    sources = []
    for c in answer.citations:
        if not c.supported:
            continue
        relative = link(c, lang) if base else None
        sources.append(Source(c.n, label(c), base + relative if relative else ""))
    return Reply(answer.answer, lang, tuple(sources), mode_line(answer, lang),
                 answer.question_id)
