"""A long-running process warms up (issue 12): the passages' lines counted ahead with the served
model's tokenizer, nothing to prime where the server counts, and what it loaded frozen out of
the garbage collector's walks (issue 26)."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import core.text
from assistant.serving.testmodel import build_test_model
from devtools.vllm_server import MODEL_DIR
from store.embed.question_openvino import OpenVinoQuestionEncoder
from tests.support.stores import ingest_paths
from ui.wiring import WarmUp, open_services, prime_counts

REPO = Path(__file__).resolve().parents[2]


def test_prime_counts_counts_the_store_passages_lines_once(make_settings) -> None:  # type: ignore[no-untyped-def]
    model = build_test_model(MODEL_DIR)
    settings = make_settings(llm={"model": str(model), "url": "http://127.0.0.1:9/v1"})
    ingest_paths(settings, [REPO / "data" / "samples" / "docs"])
    services = open_services(settings)
    try:
        assert prime_counts(services.assistant) > 100
        assert prime_counts(services.assistant) == 0  # already known
        assert prime_counts(services.assistant, limit=0) == 0
    finally:
        services.close()


def test_warm_up_loads_the_chinese_segmenter_before_the_first_question(  # type: ignore[no-untyped-def]
    make_settings, monkeypatch
) -> None:
    settings = make_settings(llm={"url": "http://127.0.0.1:9/v1"})
    monkeypatch.setattr(core.text, "_jieba", None)  # as in a process that has not cut Chinese
    services = open_services(settings)
    try:
        WarmUp(services.store).thread.join(timeout=120)
        assert core.text._jieba is not None
    finally:
        services.close()


def test_a_counter_of_the_server_primes_nothing(make_settings) -> None:  # type: ignore[no-untyped-def]
    settings = make_settings(llm={"model": "nowhere/at-all-kb-test", "url": "http://127.0.0.1:9/v1"})
    ingest_paths(settings, [REPO / "data" / "samples" / "docs"])
    services = open_services(settings)
    try:
        assert prime_counts(services.assistant) == 0
    finally:
        services.close()


def test_warm_up_freezes_what_it_loaded(make_settings) -> None:  # type: ignore[no-untyped-def]
    """Issue 26: a full garbage collection walked all of it (~150 ms, every thread paused)."""
    settings = make_settings(llm={"url": "http://127.0.0.1:9/v1"})
    services = open_services(settings)
    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        WarmUp(services.store).thread.join(timeout=120)
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()
        services.close()


def test_a_stop_waits_for_the_compile_under_way_and_begins_no_other(make_settings) -> None:  # type: ignore[no-untyped-def]
    """An OpenVINO model compiling while the interpreter exits aborts the process ("terminate
    called without an active exception": Ctrl+C in the app's first seconds). `stop` waits for
    the question encoder's compile and the space's never begins."""
    settings = make_settings(llm={"url": "http://127.0.0.1:9/v1"})
    ingest_paths(settings, [REPO / "data" / "samples" / "docs"])
    services = open_services(settings)
    try:
        space = services.store.space
        assert space is not None, "the sample store has both languages: the space is on"
        warming = WarmUp(services.store)
        deadline = time.monotonic() + 120
        while not warming.compiling.locked():  # the question encoder's compile under way
            assert warming.thread.is_alive() and time.monotonic() < deadline
            time.sleep(0.005)
        warming.stop()
        assert isinstance(services.store._question_encoder, OpenVinoQuestionEncoder)
        warming.thread.join(timeout=30)
        assert not warming.thread.is_alive()
        assert getattr(space._embedder, "_warm", None) is None  # its compile never began
    finally:
        services.close()
