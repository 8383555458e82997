"""A follow-up question read with the turns before it, for retrieval: what to search for.

"And Technical Success?" after "How often do Engineering teammates get a laptop refresh?" finds
nothing by itself: its topic is in the earlier question. A follow-up *leans* on its history when
it refers back (it, that, those, instead, too; 它, 这个, 上面, 的话), opens like a continuation
("And…", "What about…", "那…", "要是…") or ends like one ("…呢？"), or is too short to name a
topic. Then the search is the follow-up plus the topic words of the question before it (and of
that question's own history where it leaned on it, so a chain of follow-ups keeps its topic),
which weigh less than the follow-up's own: "那伙食补助呢？" after a question on hotel costs
still finds the meal allowance first. A question that stands alone (a new topic) is searched
as it is: gluing an unrelated history on front loses it.

    read_followup("And Technical Success?",
                  ["How often do Engineering teammates get a laptop refresh?"])
    -> Reading("And Technical Success?", context="Engineering teammates laptop refresh")
    .text -> "And Technical Success? (Engineering teammates laptop refresh)"
    read_followup("What is the minimum password length?", ["What is the meal allowance?"])
    -> Reading("What is the minimum password length?")

No model is asked (`answer.rewrite = "rules"`, the default): ERNIE-0.3B is too weak to rewrite
reliably and a round trip per question costs time. With a stronger model served,
`answer.rewrite = "model"` asks it for a standalone question (`rewrite_prompt`), the rules'
reading kept when it fails or says nothing usable.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.errors import GenerationError
from core.ports import Generator
from core.text import EN_STOP, ZH_STOP, Lang, detect_lang, tokenize
from core.types import Message

logger = logging.getLogger(__name__)

REWRITES = ("rules", "model", "off")

# A continuation's opening, or a word that points back at something named before.
_EN_OPENING = re.compile(
    r"^\W*(and|or|but|so|then|also|plus|what about|how about|what if|what else|same for)\b", re.I
)
_EN_POINTER = re.compile(
    r"\b(it|its|itself|that|those|these|this|them|they|their|there|such|instead|too|also|either"
    r"|neither|same|else|whatever|former|latter|rest|remaining|remainder|leftover|unused)\b",
    re.I,
)
# ...unless it points nowhere: "is it possible", "that" opening a clause, "is there",
# "this year".
_EN_NOT_POINTING = re.compile(
    r"\b(?:is|was|will|would|does|do)\s+it\s+(?:possible|ok|okay|allowed|true|necessary"
    r"|mandatory|required|acceptable|permitted|legal|fine)\b"
    r"|\bthat(?=\s+(?:i|we|you|they|he|she|it|my|our|your|the|a|an|there|this)\b)"
    r"|\b(?:is|are|was|were)\s+there\b|\bthere\s+(?:is|are|was|were|will)\b"
    r"|\bthis\s+(?:year|month|week|quarter|time)\b",
    re.I,
)
_ZH_OPENING = re.compile(r"^\W*(那么|那|还有|另外|至于|如果|要是|假如)")
_ZH_POINTER = re.compile(
    r"(它|(?<!应)该|[这那](?:个|些|种|样|笔|项|份|条|次|段|里|天|部分|类)|上面|上述|前面|当天|^\W*期间|的话"
    r"|呢\W*$)"
)
# Question words and particles: no topic in them.
_EN_ASKING = frozenset(
    """what's what how when where which who whom whose why do does did don't doesn't is are
    was were can can't could should would will i i'm my we our you much many often long far
    big there any get need""".split()
)
_ZH_ASKING = re.compile(
    r"有几天|几天|多少天|有多少|多少|有几|几|什么|怎么|怎样|如何|哪些|哪个|哪|吗|呢|是否|能不能"
    r"|可不可以|可以|有没有|请问|多久|多长"
)
# What a model puts before its rewrite: a list dash, a label ("Question:", "问题：").
_LABEL = re.compile(
    r"^(?:[-*•]\s*)?(?:(?:rewritten|standalone|last)?\s*question|改写|问题|最后一个问题)?\s*[:：]?\s*",
    re.I,
)
_EN_WORD = re.compile(r"[\w$%.'-]*\w")
_IDEOGRAPH = re.compile(r"[\u3400-\u9fff]")
MIN_EN_WORDS = 3  # fewer content words than this cannot name a topic ("When is it due?")
MIN_ZH_CHARS = 5  # nor fewer content characters than this ("职工个人呢？")


@dataclass(frozen=True)
class Reading:
    """What retrieval searches for: the question, and the topic words of the earlier
    question(s) it leans on ("" when none), which weigh less (retrieve.history_weight)."""

    question: str
    context: str = ""

    @property
    def text(self) -> str:
        """The search as the asker is shown it: the question, then the topic words its history
        supplied."""
        return f"{self.question} ({self.context})" if self.context else self.question

    @property
    def leaned(self) -> bool:
        return bool(self.context)


def _content_words(question: str) -> list[str]:
    return [
        w for w in _EN_WORD.findall(question) if w.lower() not in EN_STOP | _EN_ASKING
    ]


def leans_on_history(question: str) -> bool:
    """Whether a question refers back to, continues, or is too short to stand without the
    turns before it.

        leans_on_history("Does the company match it?") -> True
        leans_on_history("那法定节假日上班呢？") -> True
        leans_on_history("How many hours a week can I work a side job?") -> False
    """
    if detect_lang(question) == "zh":
        if _ZH_OPENING.search(question) or _ZH_POINTER.search(question):
            return True
        return len(_IDEOGRAPH.findall(_ZH_ASKING.sub("", question))) < MIN_ZH_CHARS
    if _EN_OPENING.search(question) or _EN_POINTER.search(_EN_NOT_POINTING.sub(" ", question)):
        return True
    return len(_content_words(question)) < MIN_EN_WORDS


def topic_words(question: str) -> str:
    """The words of a question that name its topic: question words, particles and punctuation
    dropped, the rest in order.

        topic_words("How often do Engineering teammates get a laptop refresh?")
        -> "Engineering teammates laptop refresh"
        topic_words("工伤停工留薪期最长多久？") -> "工伤停工留薪期最长"
    """
    if detect_lang(question) == "zh":
        return " ".join(re.sub(r"[^\w]+", " ", _ZH_ASKING.sub(" ", question)).split())
    return " ".join(_content_words(question))


def read_followup(question: str, earlier: Sequence[str]) -> Reading:
    """What to search for when `question` follows the questions `earlier` (oldest first)."""
    context = ""
    for before in earlier:
        context = f"{before} {context}" if context and leans_on_history(before) else before
    if not context or not leans_on_history(question):
        return Reading(question)
    # the topic words only: the earlier question whole found the same passages (Chinese hit@1
    # a little higher) but its longer search cost 6-13 ms more at p95
    # (bench/query/followup_latency.py)
    return Reading(question, context=topic_words(context))


def read_question(
    question: str, earlier: Sequence[str], how: str, generator: Generator
) -> Reading:
    """What to search for, read as `how` (answer.rewrite) says: "off" the question alone,
    "rules" `read_followup`, "model" the generator's standalone form of a follow-up the rules
    find leaning on its history (their reading kept when the model fails or says nothing
    usable)."""
    if how == "off" or not earlier:
        return Reading(question)
    reading = read_followup(question, earlier)
    if how != "model" or not reading.leaned:
        return reading
    lang: Lang = "zh" if detect_lang(question) == "zh" else "en"
    try:
        completion = generator.complete(
            rewrite_prompt(question, earlier, lang), max_tokens=64, temperature=0.0
        )
    except GenerationError as exc:
        logger.warning("follow-up not rewritten by the model: %s", exc)
        return reading
    rewritten = usable_rewrite(completion.text, question, earlier)
    return Reading(rewritten) if rewritten else reading


REWRITE_RULES = {
    "en": "Rewrite the user's last question so that it can be understood without the "
          "conversation: add the topic it refers to from the earlier questions. If it already "
          "stands alone, repeat it unchanged. Reply with the question only.",
    "zh": "把用户的最后一个问题改写成不看对话也能读懂的独立问题：补上它所指的前文话题。"
          "如果它本身已经完整，原样输出。只输出问题本身。",
}


def rewrite_prompt(question: str, earlier: Sequence[str], lang: Lang) -> list[Message]:
    """The messages that ask a model for a standalone form of `question`."""
    lines = "\n".join(f"- {q}" for q in earlier)
    asked = "Earlier questions" if lang == "en" else "之前的问题"
    last = "Last question" if lang == "en" else "最后一个问题"
    return [
        {"role": "system", "content": REWRITE_RULES[lang]},
        {"role": "user", "content": f"{asked}:\n{lines}\n\n{last}: {question}"},
    ]


def usable_rewrite(text: str, question: str, earlier: Sequence[str] = ()) -> str:
    """A model's rewrite cleaned to one line (a list dash, a label and quotes dropped), or ""
    when it is not a usable search: empty, far longer than a question (a model that answered
    instead), missing most of the follow-up's own words (a rewrite that loses what was asked),
    adding none (the follow-up alone, which the rules' reading beats), or an earlier question
    copied back.

        usable_rewrite("Question: How often do Technical Success teammates get a laptop?",
                       "And Technical Success?")
        -> "How often do Technical Success teammates get a laptop?"
        usable_rewrite("The maximum hotel spend is $300.", "And for food each day?") -> ""
    """
    line = next((s.strip() for s in text.strip().splitlines() if s.strip()), "")
    line = _LABEL.sub("", line).strip(" \"'“”")
    if not line or len(line) > 4 * len(question) + 80:
        return ""
    own, kept = set(_words(question)), set(_words(line))
    if len(own & kept) * 2 < len(own) or not kept - own:
        return ""
    if any(_words(line) == _words(before) for before in earlier):
        return ""
    return line


def _words(text: str) -> list[str]:
    """The words of a text that carry its content (stop words dropped, English stemmed)."""
    return [w for w in tokenize(text) if w not in EN_STOP and w not in ZH_STOP]
