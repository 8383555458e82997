"""Each user's conversations, kept in the ledger (`conversations`, `conversation_turns`): the
app's sidebar lists them, a click resumes one (after a reload or a restart too), and the API
continues one by its id. Only the owner sees, resumes, renames or deletes a conversation: an
id of someone else's reads as no conversation at all (KbError "no conversation ...").

A conversation is read back as its owner may see it now (`visible_turns`, for the page and the
API alike): an answer citing a passage outside the owner's current groups, or one no longer
stored, is withheld, from the screen and from the model's history.

    conversations = Conversations(store.ledger)
    cid = conversations.start("alice", "How many days of annual leave can I carry over?")
    conversations.add_turn("alice", cid, question, answer)
    conversations.history(alice, cid) -> [Turn(question, answer.answer)]   # alice: a User
    conversations.list_for("bob") -> []
"""

from __future__ import annotations

import dataclasses
import logging
import uuid

from core.errors import KbError
from core.types import Answer, ConversationRecord, StoredTurn, Turn, User
from store.ledger import Ledger

logger = logging.getLogger(__name__)

TITLE_CHARS = 60
# The turns a resumed conversation hands the assistant as context, newest last; the prompt
# packer keeps what fits of them.
HISTORY_TURNS = 20
# The mode of a stored turn read back withheld: it cites what its owner may no longer see.
WITHHELD = "withheld"


def title_from(question: str) -> str:
    """A conversation's title: its first question's first line, cut at a word near 60 chars.

    title_from("How many days of annual leave can I carry over into next year, and when?")
        -> "How many days of annual leave can I carry over into next…"
    """
    line = " ".join(question.strip().split("\n", 1)[0].split())
    if len(line) <= TITLE_CHARS:
        return line or "…"
    cut = line[:TITLE_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > TITLE_CHARS // 2 else cut).rstrip(" ,.;:?!，。") + "…"


class Conversations:
    """The conversations of every user, each method on behalf of one `owner`."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def start(self, owner: str, first_question: str) -> str:
        """A new, empty conversation titled after its first question; returns its id."""
        conversation_id = uuid.uuid4().hex
        self.ledger.create_conversation(conversation_id, owner, title_from(first_question))
        logger.info("conversation %s started by %s", conversation_id[:8], owner)
        return conversation_id

    def list_for(self, owner: str, limit: int = 100) -> list[ConversationRecord]:
        """The owner's conversations, the most recently continued first."""
        return self.ledger.conversations(owner, limit)

    def get(self, owner: str, conversation_id: str) -> ConversationRecord:
        found = self.ledger.conversation(conversation_id, owner) if conversation_id else None
        if found is None:
            if conversation_id:
                logger.warning("%s asked for conversation %s: not theirs or gone", owner,
                               conversation_id[:40])
            raise KbError(f"no conversation {conversation_id[:40]!r} of {owner} (list yours in "
                          "the sidebar, or leave the id out to start one)")
        return found

    def turns(self, owner: str, conversation_id: str) -> list[StoredTurn]:
        """The turns of the owner's conversation, oldest first; KbError if it is not theirs."""
        self.get(owner, conversation_id)
        return self.ledger.conversation_turns(conversation_id, owner)

    def visible_turns(self, user: User, conversation_id: str) -> list[StoredTurn]:
        """The turns of the user's conversation as the user may see them now, oldest first: one
        citing a passage outside the user's current groups, or no longer stored, comes back
        withheld (mode WITHHELD; its answer, citations and the model's text emptied). KbError
        if it is not theirs."""
        turns = self.turns(user.name, conversation_id)
        cited = [c.chunk_id for turn in turns for c in turn.citations]
        groups = self.ledger.chunk_groups(cited)
        mine = set(user.groups)
        hidden = {chunk for chunk in cited if not mine & set(groups.get(chunk, ()))}
        return [dataclasses.replace(turn, answer="", citations=(), raw_answer="", mode=WITHHELD)
                if any(c.chunk_id in hidden for c in turn.citations) else turn
                for turn in turns]

    def history(self, user: User, conversation_id: str) -> list[Turn]:
        """What the assistant gets as context when the conversation goes on: its last turns
        as the user may see them now (a withheld answer is empty)."""
        turns = self.visible_turns(user, conversation_id)[-HISTORY_TURNS:]
        return [Turn(t.question, t.answer) for t in turns]

    def add_turn(self, owner: str, conversation_id: str, question: str, answer: Answer) -> int:
        """Append an answered question; returns its position. KbError if it is not theirs."""
        ordinal = self.ledger.add_conversation_turn(conversation_id, owner, question, answer)
        if ordinal < 0:
            self.get(owner, conversation_id)  # raises with the message
        return ordinal

    def rename(self, owner: str, conversation_id: str, title: str) -> None:
        title = " ".join((title or "").split())[:200]
        if not title:
            raise KbError("a conversation needs a title: type one, then rename")
        if not self.ledger.rename_conversation(conversation_id, owner, title):
            self.get(owner, conversation_id)

    def delete(self, owner: str, conversation_id: str) -> None:
        """Remove the conversation and its turns (the questions stay in the admin's records)."""
        if not self.ledger.delete_conversation(conversation_id, owner):
            self.get(owner, conversation_id)
        logger.info("conversation %s deleted by %s", conversation_id[:8], owner)
