"""The organisation a document belongs to, as its title names it, and the documents of the
organisation a question names: in a library of several organisations' handbooks on the same
topics ("Sourcegraph Handbook: Time Off and Leave", "18F / TTS Handbook: Leave and Time Off"), a
question that names one ("How many weeks of parental leave does Sourcegraph give?",
"Sourcegraph 员工生孩子可以休几周育儿假？") is about that organisation's policy, not its
neighbour's.

A title's lead is what comes before its first colon ("Sourcegraph Handbook"); its owner words are
the lead's words (letters and digits, lower case) found in the leads of at least two titles and
of at most half of the titles that have a lead: a family's name ("sourcegraph", "18f", "tts"),
not a word every family shares ("handbook"). A title without a colon names no owner.

    owners = OwnerIndex({"a": "Sourcegraph Handbook: Leave", "b": "Sourcegraph Handbook: Travel",
                         "c": "18F / TTS Handbook: Leave", "d": "18F / TTS Handbook: Travel"})
    owners.named("Does Sourcegraph pay for travel?") -> {"a", "b"}
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Mapping

from core.text import EN_STOP

_LEAD = re.compile(r"[:：]")
_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


class OwnerIndex:
    """Owner words to the documents whose title leads with them."""

    def __init__(self, titles: Mapping[str, str]) -> None:
        leads = {
            doc_id: _words(_LEAD.split(title, 1)[0]) - EN_STOP
            for doc_id, title in titles.items()
            if _LEAD.search(title)
        }
        counts = Counter(word for words in leads.values() for word in words)
        self._docs: dict[str, set[str]] = {}
        for doc_id, words in leads.items():
            for word in words:
                if 2 <= counts[word] <= len(leads) / 2:
                    self._docs.setdefault(word, set()).add(doc_id)

    def named(self, question: str) -> set[str]:
        """The documents of every organisation the question names (empty: it names none)."""
        found: set[str] = set()
        for word in _words(question) & self._docs.keys():
            found |= self._docs[word]
        return found
