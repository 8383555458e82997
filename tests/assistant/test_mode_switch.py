"""The demo starts the model server beside the app: one assistant answers retrieval-only while
the server is not up and with generated answers once it is, without a restart."""

from __future__ import annotations

from pathlib import Path

from assistant.answer import Assistant
from core.config import load_settings
from core.errors import GenerationUnavailable
from core.types import Block, DocMeta, ParsedDoc
from ingest.pipeline import Writer
from store.ledger import Ledger
from store.store import Store
from tests.support.fakes import FakeCounter, FakeEmbedder, FakeGenerator, MemoryVectorIndex

REPO = Path(__file__).resolve().parents[2]
LEAVE = "Employees may carry over up to five days of unused annual leave into the next year."


def test_the_same_assistant_switches_to_generated_answers_when_the_server_is_up(
    tmp_path: Path,
) -> None:
    settings = load_settings(REPO / "config.toml", environ={}).with_store(tmp_path / "store")
    store = Store(settings, Ledger(tmp_path / "l.sqlite"), MemoryVectorIndex(), FakeEmbedder())
    meta = DocMeta(id="leave.pdf", path="leave.pdf", root="/d", sha256="x", size=1, mtime=0.0)
    Writer(store, store.collection).write(meta, ParsedDoc([Block(LEAVE, ("Leave",), 1, 1)]))
    generator = FakeGenerator()
    assistant = Assistant(store, generator, FakeCounter())
    question = "How many days of unused annual leave can employees carry over?"
    try:
        generator.enqueue([GenerationUnavailable("vLLM at http://127.0.0.1:8000 is starting")])
        first = assistant.ask(question, ["all"])
        assert first.mode == "retrieval_only" and "five days" in first.answer
        generator.enqueue("Employees may carry over up to five days of unused annual leave [1].")
        second = assistant.ask(question, ["all"])
        assert second.mode == "generated" and second.citations[0].file == "leave.pdf"
    finally:
        store.close()
