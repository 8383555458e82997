"""EmbedAhead (ingest/embed_ahead.py): passages of several items embedded together in a background
thread, items returned in input order with their own vectors, errors after earlier items."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from ingest.embed_ahead import EmbedAhead


class Recorder:
    """An embedder whose vector of a text is (len(text), number of the text), recording calls."""

    def __init__(self, fail_on: str = "") -> None:
        self.calls: list[list[str]] = []
        self.threads: set[str] = set()
        self.fail_on = fail_on

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        self.threads.add(threading.current_thread().name)
        if self.fail_on in texts:
            raise RuntimeError(f"cannot embed {self.fail_on!r}")
        return np.array([[len(t), int(t.split("-")[1])] for t in texts], dtype=np.float32)


def texts_of(item: int, count: int) -> list[str]:
    return [f"t{item}-{item * 100 + k}" for k in range(count)]


def run(ahead: EmbedAhead[int], counts: Sequence[int]) -> list[tuple[int, np.ndarray]]:
    out: list[tuple[int, np.ndarray]] = []
    for item, count in enumerate(counts):
        out.extend(ahead.add(item, texts_of(item, count)))
    return out + ahead.finish()


def test_items_come_back_in_order_with_their_own_vectors() -> None:
    counts = [3, 0, 5, 1, 0, 7, 2]
    embed = Recorder()
    with EmbedAhead[int](embed, wave=6, first_wave=6) as ahead:
        out = run(ahead, counts)
    assert [tag for tag, _ in out] == list(range(len(counts)))
    for tag, vectors in out:
        assert vectors.shape[0] == counts[tag]
        if counts[tag]:
            assert [int(v) for v in vectors[:, 1]] == [tag * 100 + k for k in range(counts[tag])]
    assert embed.threads and "MainThread" not in embed.threads


def test_passages_of_several_items_are_embedded_in_one_call() -> None:
    embed = Recorder()
    with EmbedAhead[int](embed, wave=8, first_wave=8) as ahead:
        run(ahead, [3, 3, 3, 3, 3, 3, 1])
    # waves fill to 8 passages or more: 3+3+3, 3+3+3, then the rest
    assert [len(c) for c in embed.calls] == [9, 9, 1]
    assert {t.split("-")[0] for t in embed.calls[0]} == {"t0", "t1", "t2"}


def test_an_idle_embedder_starts_on_the_first_wave_at_once() -> None:
    for first_wave, waves in ((2, 1), (100, 0)):
        with EmbedAhead[int](Recorder(), wave=100, first_wave=first_wave) as ahead:
            out = ahead.add(0, texts_of(0, 1))
            assert ahead.waves == 0
            out += ahead.add(1, texts_of(1, 1))
            assert ahead.waves == waves  # nothing else in flight: 2 passages start a wave
            assert [tag for tag, _ in out + ahead.finish()] == [0, 1]


def test_an_embedding_error_comes_after_the_earlier_items() -> None:
    embed = Recorder(fail_on="t2-200")
    returned: list[int] = []
    with pytest.raises(RuntimeError, match="t2-200"):
        with EmbedAhead[int](embed, wave=2, first_wave=2) as ahead:
            for item in range(5):
                returned.extend(tag for tag, _ in ahead.add(item, texts_of(item, 2)))
            returned.extend(tag for tag, _ in ahead.finish())
    assert returned == [0, 1]


def test_a_wave_must_hold_a_text() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        EmbedAhead[int](Recorder(), wave=0)
