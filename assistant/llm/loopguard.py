"""The loop guard: small models repeat themselves ("The answer is: 2.2 Mandatory training" until
the token limit). Fed the streamed text, it trips as soon as a sentence comes back more than
`max_repeats` times, the tail of the text is one run of words repeated back to back, or one
character (a space, say: a tiny random model emits spaces until the limit) fills the tail; the
answer is then cut where the repetition began.

    guard = LoopGuard()
    for piece in stream:
        if guard.feed(piece):          # True: stop the generation now
            break
    guard.text                         # what was streamed, repeated part trimmed

Pure: no I/O, no clock; the answering pipeline closes the stream (vLLM aborts the request).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from core.text import split_sentences

_UNIT = re.compile(r"[A-Za-z0-9_]+|\S")  # an English word or number, else one character
_SPACE = re.compile(r"\s+")


def sentence_key(sentence: str) -> str:
    """normalise a sentence for comparison: NFKC, case-folded, white space and [n] dropped.

    sentence_key(" The answer [1]. ") -> "theanswer."
    """
    text = unicodedata.normalize("NFKC", sentence).casefold()
    return _SPACE.sub("", re.sub(r"\[\d+(?:\s*,\s*\d+)*\]", "", text))


def _units(text: str) -> list[tuple[str, int]]:
    """Words, numbers and single other characters (CJK, punctuation) with their end offsets.

    _units("Hi 你好!") -> [("hi", 2), ("你", 4), ("好", 5), ("!", 6)]
    """
    return [(m.group().casefold(), m.end()) for m in _UNIT.finditer(text)]


@dataclass
class LoopGuard:
    """Watches a streamed answer for repetition.

    - a sentence (normalised) seen more than `max_repeats` times trips it; the text is cut
      where that sentence came the second time;
    - the last `min_run`..`max_run` units repeated `max_repeats + 1` times back to back trip it
      (loops without sentence ends: "1. 1. 1. 1." or "休假休假休假休假"); the text is cut after
      the first occurrence;
    - `max_same_chars` of one character in a row trip it (white space included); the text is
      cut where the run began.
    """

    max_repeats: int = 2
    min_run: int = 2
    max_run: int = 40
    max_same_chars: int = 32
    tripped: bool = False
    _text: str = ""
    _cut: int | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        """The answer so far, without the repeated part once tripped."""
        return self._text if self._cut is None else self._text[: self._cut].rstrip()

    def feed(self, piece: str) -> bool:
        """Add a streamed piece; True when the answer has started to loop."""
        if self.tripped:
            return True
        self._text += piece
        cut = self._same_chars()
        if cut is None:
            cut = self._repeated_sentence()
        if cut is None:
            cut = self._repeated_run()
        if cut is not None:
            self.tripped, self._cut = True, cut
        return self.tripped

    def _same_chars(self) -> int | None:
        tail = self._text[-self.max_same_chars :]
        if len(tail) == self.max_same_chars and tail == tail[0] * len(tail):
            return len(self._text.rstrip(tail[0]))
        return None

    def _repeated_sentence(self) -> int | None:
        sentences = split_sentences(self._text)
        # the last piece may be a sentence still being written: only finished ones count
        ended = self._text.rstrip().endswith(tuple("。！？；.!?…"))
        starts: dict[str, list[int]] = {}
        offset = 0
        for sentence in sentences if ended else sentences[:-1]:
            start = self._text.index(sentence, offset)
            offset = start + len(sentence)
            key = sentence_key(sentence)
            if len(key) < 4:  # "1." or "-": list marks repeat legitimately
                continue
            starts.setdefault(key, []).append(start)
            if len(starts[key]) > self.max_repeats:
                return starts[key][1]  # keep what came before the first repeat
        return None

    def _repeated_run(self) -> int | None:
        units = _units(self._text)
        times = self.max_repeats + 1
        for size in range(self.min_run, min(self.max_run, len(units) // times) + 1):
            tail = [u for u, _ in units[-size * times :]]
            run = tail[:size]
            if all(tail[i * size : (i + 1) * size] == run for i in range(1, times)):
                return units[-size * times + size - 1][1]
        return None
