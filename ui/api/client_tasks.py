"""The chat front ends' own tasks, told apart from employees' questions: Open WebUI asks the
model of a chat for its title, tags and follow-up suggestions with prompts that open with
"### Task:" and hold the chat in <chat_history>. They are answered here, in the JSON the client
asks for, without retrieval, and never recorded as questions.

    client_task('### Task:\\nGenerate a concise, 3-5 word title … <chat_history>…') -> "title"
    task_reply("title", prompt) -> '{"title": "Annual leave carry-over"}'
"""

from __future__ import annotations

import json
import re

_TASK = re.compile(r"^\s*#{2,4}\s*Task:", re.IGNORECASE)
_KINDS = (("title", re.compile(r"\btitle\b", re.I)), ("tags", re.compile(r"\btags\b", re.I)),
          ("follow_ups", re.compile(r"follow[- ]?up", re.I)),
          ("autocomplete", re.compile(r"autocomplet", re.I)))
_USER_LINE = re.compile(r"^\s*user:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
TITLE_WORDS = 6  # words of the first question a title keeps (characters x3 for Chinese)


def client_task(text: str) -> str | None:
    """The kind of a front end's task prompt ("title", "tags", "follow_ups", "autocomplete" or
    "other"), or None for a person's question."""
    if not _TASK.match(text) or "<chat_history>" not in text:
        return None
    task = _TASK.split(text, 1)[-1].split("###", 1)[0]  # the task's own lines
    return next((kind for kind, words in _KINDS if words.search(task)), "other")


def _first_question(prompt: str) -> str:
    history = prompt.split("<chat_history>", 1)[-1].split("</chat_history>", 1)[0]
    found = _USER_LINE.search(history)
    return " ".join((found.group(1) if found else history).split())


def title_of(question: str) -> str:
    """A chat's title: its first question, shortened.

    title_of("How many days of unused annual leave can I carry over?")
        -> "How many days of unused annual leave…"
    """
    question = question.strip().rstrip("?？")
    if re.search(r"[\u4e00-\u9fff]", question):
        limit = TITLE_WORDS * 3
        return question if len(question) <= limit else question[:limit] + "…"
    words = question.split()
    return " ".join(words[:TITLE_WORDS]) + ("…" if len(words) > TITLE_WORDS else "")


def task_reply(kind: str, prompt: str) -> str:
    """The task's answer in the JSON its prompt asks for: a title from the first question,
    the tag "Policy", no follow-ups, no completion."""
    if kind == "title":
        return json.dumps({"title": title_of(_first_question(prompt)) or "Policy question"},
                          ensure_ascii=False)
    if kind == "tags":
        return json.dumps({"tags": ["Policy"]})
    if kind == "follow_ups":
        return json.dumps({"follow_ups": []})
    if kind == "autocomplete":
        return json.dumps({"text": ""})
    return "{}"
