"""Chat front ends' own tasks (Open WebUI's title, tags and follow-up prompts) are answered
without retrieval and never recorded as questions; /v1 answers link their sources absolutely."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from core.types import Citation
from ui.api.client_tasks import client_task, task_reply, title_of
from ui.api.openai_api import link, sources_text

# Open WebUI's DEFAULT_TITLE_GENERATION_PROMPT_TEMPLATE (backend/open_webui/config.py), with
# {{MESSAGES:END:2}} filled as it fills it.
TITLE_PROMPT = """### Task:
Generate a concise, 3-5 word title with an emoji summarizing the chat history.
### Guidelines:
- The title should clearly represent the main theme or subject of the conversation.
- Use emojis that enhance understanding of the topic, but avoid quotation marks or special formatting.
- Write the title in the chat's primary language; default to English if multilingual.
- Prioritize accuracy over excessive creativity; keep it clear and simple.
### Output:
JSON format: { "title": "your concise title here" }
### Examples:
- { "title": "📉 Stock Market Trends" },
- { "title": "🍪 Perfect Chocolate Chip Recipe" },
- { "title": "Evolution of Music Streaming" },
- { "title": "Remote Work Productivity Tips" },
- { "title": "Artificial Intelligence in Healthcare" },
- { "title": "🎮 Video Game Development Insights" }
### Chat History:
<chat_history>
USER: How many days of unused annual leave can I carry over?
ASSISTANT: Employees may carry over at most 5 days of unused annual leave into the next year. [1]
</chat_history>"""  # noqa: E501
TAGS_PROMPT = """### Task:
Generate 1-3 broad tags categorizing the main themes of the chat history, along with 1-3 more specific subtopic tags.

### Guidelines:
- If content is too short (less than 3 messages) or too diverse, use only ["General"]

### Output:
JSON format: { "tags": ["tag1", "tag2", "tag3"] }

### Chat History:
<chat_history>
USER: 婚假有几天？
</chat_history>"""  # noqa: E501
FOLLOW_UP_PROMPT = """### Task:
Suggest 3-5 relevant follow-up questions or prompts that the user might naturally ask next in this conversation as a **user**, based on the chat history, to help continue or deepen the discussion.
### Guidelines:
- Write all follow-up questions from the user's point of view, directed to the assistant.
### Output:
JSON format: { "follow_ups": ["Question 1?", "Question 2?", "Question 3?"] }
### Chat History:
<chat_history>
USER: 婚假有几天？
</chat_history>"""  # noqa: E501


def test_open_webui_tasks_are_told_apart_from_questions() -> None:
    assert client_task(TITLE_PROMPT) == "title"
    assert client_task(TAGS_PROMPT) == "tags"
    assert client_task(FOLLOW_UP_PROMPT) == "follow_ups"
    assert client_task("How many days of unused annual leave can I carry over?") is None
    assert client_task("### Task: in my job description, what leave applies?") is None
    assert json.loads(task_reply("title", TITLE_PROMPT)) == {
        "title": "How many days of unused annual…"}
    assert json.loads(task_reply("tags", TAGS_PROMPT)) == {"tags": ["Policy"]}
    assert json.loads(task_reply("follow_ups", FOLLOW_UP_PROMPT)) == {"follow_ups": []}
    assert title_of("去北京出差，住宿费每晚最多能报多少？") == "去北京出差，住宿费每晚最多能报多少"


def test_source_links_are_absolute_under_the_apps_address() -> None:
    pdf = Citation(1, "leave.pdf", 3, "", "5 days", "c1")
    word = Citation(2, "it.docx", None, "3.2 Lost", "report it", "c2")
    base = "https://kb.example.com/"
    assert link(pdf, "en", base) == "https://kb.example.com/page/c1?q=5%20days"
    assert link(word, "en", base).startswith("https://kb.example.com/section/c2?lang=en")
    listed = sources_text([pdf], "en", base)
    assert listed == "\n\nSources:\n[1] [leave.pdf p.3](https://kb.example.com/page/c1?q=5%20days)"


@pytest.mark.slow
def test_open_webuis_title_task_is_answered_without_being_recorded(login_server: Any) -> None:
    api = login_server.url + "v1/chat/completions"
    headers = {"Authorization": f"Bearer {login_server.tokens['bob']}"}
    ledger = login_server.app.store.ledger
    before = len(ledger.question_records())
    for stream in (False, True):
        body = {"model": "kb-assistant", "stream": stream,
                "messages": [{"role": "user", "content": TITLE_PROMPT}]}
        reply = httpx.post(api, json=body, headers=headers, timeout=60)
        assert reply.status_code == 200, reply.text
        if not stream:
            content = reply.json()["choices"][0]["message"]["content"]
            assert json.loads(content)["title"].startswith("How many days")
        else:
            assert '\\"title\\"' in reply.text and reply.text.rstrip().endswith("[DONE]")
    assert len(ledger.question_records()) == before  # no employee asked anything
    # a question's sources link to the app under the address it was asked at
    body = {"model": "kb-assistant",
            "messages": [{"role": "user", "content": "How many days of unused annual leave "
                                                     "can I carry over?"}]}
    answer = httpx.post(api, json=body, headers=headers, timeout=120).json()
    links = [c["link"] for c in answer["kb"]["citations"]]
    assert links and all(x.startswith(login_server.url + "page/") for x in links), links
    assert f"]({login_server.url}page/" in answer["choices"][0]["message"]["content"]
