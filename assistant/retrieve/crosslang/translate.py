"""The question carried into the other language by the served model (`retrieve.translate = "model"`;
off by default): its translation is searched for beside the question's own words, as a follow-up's
history is (`Reading.context`, weighing retrieve.history_weight in BM25).

Only where it could help: a store that holds passages in the other language. ERNIE-0.3B is too weak
to translate reliably and a model round trip costs time, so the bridge and the space carry questions
across without a model; a stronger served model may do better. A translation that fails, says
nothing usable or is still in the question's language leaves the reading as it was.

    translated(Reading("How many days of annual leave?"), "model", generator, {"en", "zh"})
    -> Reading("How many days of annual leave?", context="年假有多少天？")
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from assistant.followup import Reading
from core.errors import GenerationError
from core.ports import Generator
from core.text import Lang, detect_lang, other_lang
from core.types import Message

logger = logging.getLogger(__name__)

TRANSLATES = ("off", "model")  # retrieve.translate

_RULES = {
    "zh": "Translate the user's question into English. Keep numbers, amounts and names as they "
          "are. Reply with the translated question only.",
    "en": "把用户的问题翻译成简体中文。数字、金额和名称保持原样。只输出译文。",
}


def translate_prompt(question: str, lang: Lang) -> list[Message]:
    """The messages that ask a model to carry a question in `lang` into the other language."""
    return [{"role": "system", "content": _RULES[lang]}, {"role": "user", "content": question}]


def usable_translation(text: str, question: str) -> str:
    """A model's translation cleaned to one line, or "" when it is not usable: empty, far
    longer than the question (an answer instead), or still in the question's language.

        usable_translation("年假有多少天？", "How many days of annual leave?") -> "年假有多少天？"
        usable_translation("How many days?", "How many days of annual leave?") -> ""
    """
    line = next((s.strip() for s in text.strip().splitlines() if s.strip()), "")
    line = line.strip(" \"'“”")
    if not line or len(line) > 3 * len(question) + 40:
        return ""
    if detect_lang(line) == detect_lang(question):
        return ""
    return line


def translated(
    reading: Reading, how: str, generator: Generator, store_langs: Collection[str]
) -> Reading:
    """`reading` with the question's translation added to what is searched for, when `how` is
    "model" and the store holds passages in the other language (`store_langs`)."""
    lang: Lang = "zh" if detect_lang(reading.question) == "zh" else "en"
    other = other_lang(lang)
    if how != "model" or other not in store_langs:
        return reading
    try:
        completion = generator.complete(
            translate_prompt(reading.question, lang), max_tokens=96, temperature=0.0
        )
    except GenerationError as exc:
        logger.warning("question not translated by the model: %s", exc)
        return reading
    line = usable_translation(completion.text, reading.question)
    if not line:
        return reading
    context = f"{reading.context} {line}" if reading.context else line
    return Reading(reading.question, context=context)
