"""Pipeline overhead before the model: what `Assistant.ask_stream` spends before its request is
sent, against the time to the first streamed token, with the real vLLM CPU server.

Serves the tiny random ERNIE (`.cache/test-model`, built when missing) with `kb llm serve`'s
command on the vLLM CPU build, ingests the sample documents into a store kept in
/tmp/kb-bench-samples, and asks the sample and public questions through the real
`Assistant` (its `LlmClient`, the test model's tokenizer counting; questions embedded as the
app embeds them, on the OpenVINO export once `WarmUp` loaded it). Per question it records:
retrieve, pack (budget planning, filling the window, the prompt; `counting` is the part of it
spent in the token counter), the client's budget check, "before request" (all of it: from the
question to the moment the client sends), and the first token. The model talks nonsense, so
each answer is stopped after its first token (the pipeline before it is what is measured).

Baseline in the same run, question by question in turn with kb: the same pipeline with the
packing, counting and question embedding of main before issue 12 (the whole block counted
after every passage, every text tokenized whole; questions embedded by the passage embedder).

    .venv/bin/python -m bench.query.overhead            # 60 questions
    .venv/bin/python -m bench.query.overhead --quick    # 20
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import assistant.window as window
from assistant.answer import Assistant
from assistant.llm.client import LlmClient
from assistant.llm.tokens import LocalTokenCounter
from assistant.pack import _pack_counting_each
from assistant.pack import pack as PACK
from assistant.serving.serve import VllmServer
from assistant.serving.testmodel import build_test_model
from bench.common import SAMPLE_STORE, Host, ensure_sample_store, questions
from core.offline import offline_environment
from core.types import Answer, Message
from devtools.ports import free_port
from store.store import Store, open_store
from ui.wiring import WarmUp, prime_counts

REPO = Path(__file__).resolve().parents[2]

# The retriever's own stages (`Retrieval.timings_ms`), reported beside the bench's: BM25 and
# the mask; the wait for the dense side after it; the question's embedding and the vector
# search on the dense side's thread; `_prefer_newest` and the answerability evidence.
STAGES = ("lexical", "dense", "dense_embed", "dense_search", "rerank")
LANGS = ("en", "zh")  # before request and share are also reported per question language


class TimedCounter:
    """A token counter that adds up the time spent in it."""

    def __init__(self, inner: LocalTokenCounter) -> None:
        self.inner = inner
        self.seconds = 0.0

    def _timed(self, call: Callable[[], Any]) -> Any:
        t = time.perf_counter()
        try:
            return call()
        finally:
            self.seconds += time.perf_counter() - t

    def count(self, text: str) -> int:
        return int(self._timed(lambda: self.inner.count(text)))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return list(self._timed(lambda: self.inner.count_many(texts)))

    def count_messages(self, messages: Sequence[Message]) -> int:
        return int(self._timed(lambda: self.inner.count_messages(messages)))

    def prime(self, texts: Sequence[str]) -> int:
        return self.inner.prime(texts)  # at start, not timed: before any question


class TimedClient:
    """The real client; notes when `stream()` is called and when the request goes out."""

    def __init__(self, inner: LlmClient, counts_prompt: bool = False) -> None:
        self.inner = inner
        self.counts_prompt = counts_prompt
        self.called = 0.0
        self.sent = 0.0

    def stream(self, messages: Sequence[Message], **kwargs: Any) -> Any:
        self.called = time.perf_counter()
        if self.counts_prompt:  # main counted every prompt before sending it
            kwargs.pop("prompt_bound", None)
        stream = self.inner.stream(messages, **kwargs)  # the budget check happens here
        self.sent = time.perf_counter()  # the request itself goes out on the first next()
        return stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Variant:
    """One pipeline over the sample store with the real client, and its timings."""

    def __init__(self, settings: Any, model_dir: Path, old: bool) -> None:
        store = open_store(settings)
        if old:  # main before issue 12: questions through the passage embedder
            store = Store(settings, store.ledger, store.vectors, store._source)
        else:  # as the app: questions on the OpenVINO export once it is loaded
            WarmUp(store).thread.join()
        self.old = old
        self.store = store
        counter = LocalTokenCounter(model_dir, trust_remote_code=True)
        counter.additive = not old  # main counted every text whole
        self.counter = TimedCounter(counter)
        llm = LlmClient.from_settings(settings.llm, self.counter)  # type: ignore[arg-type]
        self.client = TimedClient(llm, counts_prompt=old)
        self.assistant = Assistant(store, self.client, self.counter)  # type: ignore[arg-type]
        if not old:  # as the app: the passages' lines counted at start
            self.primed = prime_counts(self.assistant)
        retrieve = self.assistant.retriever.retrieve
        self.retrieved = 0.0

        def timed_retrieve(*a: Any, **k: Any) -> Any:
            try:
                result = retrieve(*a, **k)
                self.stages, self.lang = result.timings_ms, result.lang
                return result
            finally:
                self.retrieved = time.perf_counter()

        self.assistant.retriever.retrieve = timed_retrieve  # type: ignore[method-assign]
        self.stages: dict[str, float] = {}
        self.lang = ""
        self.rows: dict[str, list[float]] = {
            k: [] for k in ("retrieve", "pack", "counting", "budget_check", "before_request",
                            "first_token", "share", *(f"retrieve.{s}" for s in STAGES),
                            *(f"{k}.{lang}" for k in ("before_request", "share")
                              for lang in LANGS))
        }

    def ask(self, question: str, record: bool = True) -> None:
        """Ask up to the first streamed token; the stream is then closed (the request with it).
        The old variant packs as main did: the whole block counted after every passage."""
        window.pack = _pack_counting_each if self.old else PACK  # type: ignore[assignment]
        self.counter.seconds, self.client.sent = 0.0, 0.0
        started = time.perf_counter()
        stream: Iterator[str | Answer] = self.assistant.ask_stream(question, ["all"])
        first = None
        try:
            for item in stream:
                if isinstance(item, str) and self.client.sent:
                    first = time.perf_counter()
                    break
        finally:
            stream.close()  # type: ignore[attr-defined]
            window.pack = PACK  # type: ignore[assignment]
        if first is None or not record:
            return  # abstained or retrieval-only: no request was sent
        before = self.client.sent - started
        self.rows["retrieve"].append((self.retrieved - started) * 1000)
        self.rows["pack"].append((self.client.called - self.retrieved) * 1000)
        self.rows["budget_check"].append((self.client.sent - self.client.called) * 1000)
        self.rows["counting"].append(self.counter.seconds * 1000)
        self.rows["before_request"].append(before * 1000)
        self.rows["first_token"].append((first - started) * 1000)
        self.rows["share"].append(before / (first - started))
        # English questions wait for their embedding; Chinese ones skip it with an English-only
        # embedder (`embed.languages`): a mixed set's p50 falls between the two
        if self.lang in LANGS:
            self.rows[f"before_request.{self.lang}"].append(before * 1000)
            self.rows[f"share.{self.lang}"].append(before / (first - started))
        for stage in STAGES:  # Retrieval.timings_ms; the dense ones for questions it embeds
            if stage in self.stages:
                self.rows[f"retrieve.{stage}"].append(self.stages[stage])

    def close(self) -> None:
        self.client.inner.close()
        self.store.close()


def summarise(rows: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"answers": len(rows["first_token"])}
    for key, values in rows.items():
        if values:
            arr = np.asarray(values)
            digits = 3 if key.startswith("share") else 1
            out[key] = {"p50": round(float(np.percentile(arr, 50)), digits),
                        "p95": round(float(np.percentile(arr, 95)), digits)}
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 questions instead of 60")
    parser.add_argument("--pause", type=float, default=0.0,
                        help="seconds to wait before each question (the server finishing the "
                             "cancelled answer before); 0 as before")
    args = parser.parse_args(argv)
    offline_environment()
    model_dir = build_test_model(REPO / ".cache" / "test-model")
    port = free_port()
    base = ensure_sample_store()
    llm = dataclasses.replace(
        base.llm, model=str(model_dir), url=f"http://127.0.0.1:{port}/v1", port=port,
        first_token_timeout_s=120.0, total_timeout_s=300.0,
    )
    settings = dataclasses.replace(base, llm=llm)
    asked = questions(20 if args.quick else 60)
    server = VllmServer.for_settings(
        settings, cache_dir=REPO / ".cache" / "vllm", log_path=SAMPLE_STORE / "vllm.log"
    )
    server.start()
    try:
        server.wait_ready(600)
        variants = {"kb": Variant(settings, model_dir, old=False),
                    "main_before_issue_12": Variant(settings, model_dir, old=True)}
        for variant in variants.values():  # both languages: jieba loads its dictionary once
            variant.ask("warm up: how many days of annual leave?", record=False)
            variant.ask("热身：年假有几天？", record=False)
        host = Host()
        for q in asked:  # interleaved: both see the same machine load
            for variant in variants.values():
                time.sleep(args.pause)  # the server done with the last (cancelled) answer
                variant.ask(q)
        report: dict[str, Any] = {"questions": len(asked)}
        for name, variant in variants.items():
            report[name] = summarise(variant.rows)
            variant.close()
        kb, main_ = report["kb"], report["main_before_issue_12"]
        report["ratio_before_request_main_to_kb_p50"] = round(
            main_["before_request"]["p50"] / kb["before_request"]["p50"], 2
        )
        report["host"] = host.report()
    finally:
        server.stop()
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
