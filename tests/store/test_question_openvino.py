"""Questions on the passage embedder's OpenVINO export (issue 12): in float32 the numpy
encoder's vectors, in bfloat16 (the default) within 1e-4 of them, and the app's switch to it
once loaded in the background."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from core.config import load_settings
from core.text import detect_lang
from core.types import Passage
from store.embed.embedder import load_embedder
from store.embed.question_numpy import open_question_encoder
from store.embed.question_openvino import OpenVinoQuestionEncoder, open_openvino_question_encoder
from tests.support.stores import ingest_paths
from ui.wiring import WarmUp, open_services

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = [
    "How many days of annual leave can I carry over?",
    "ok",
    "What is the hotel limit per night in a tier 1 city for travel?",
    " ".join(["Expenses must be filed within 30 days with receipts attached."] * 40),  # truncated
    # 32 and 33 tokens with [CLS] and [SEP]: either side of the fixed-shape model's width
    *("leave " * n for n in (30, 31)),
]


@pytest.mark.parametrize(("precision", "within"), [("f32", 1e-6), ("bf16", 1e-4)])
def test_questions_on_openvino_equal_numpys_within_their_precision(
    precision: str, within: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("store.embed.question_openvino.PRECISION", precision)
    embed = load_settings(REPO / "config.toml", environ={}).embed
    load_embedder(embed)  # the export, made once per machine (as ingest makes it)
    encoder = open_openvino_question_encoder(embed)
    numpy_encoder = open_question_encoder(embed)
    assert isinstance(encoder, OpenVinoQuestionEncoder) and numpy_encoder is not None
    ours, exact = encoder.embed_batch(QUESTIONS), numpy_encoder.embed_batch(QUESTIONS)
    assert ours.shape == exact.shape == (len(QUESTIONS), encoder.dim)
    assert list(encoder._requests) == [32, None]  # padded to 32 tokens, or the dynamic model
    cosines = (ours * exact).sum(axis=1)
    # float32 (as passages are embedded): equal to rounding; bfloat16 is ~1.4e-5 off
    assert np.all(1 - cosines < within), cosines
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_no_export_or_another_runtime_keeps_numpy(tmp_path: Path) -> None:
    embed = load_settings(REPO / "config.toml", environ={}).embed
    assert open_openvino_question_encoder(replace(embed, runtime="torch")) is None
    assert open_openvino_question_encoder(replace(embed, export_dir=str(tmp_path))) is None


def test_the_app_switches_questions_to_openvino_once_loaded(make_settings) -> None:  # type: ignore[no-untyped-def]
    settings = make_settings()
    ingest_paths(settings, [REPO / "data" / "samples" / "docs"])
    services = open_services(settings)
    try:
        question = "How many days of annual leave can I carry over?"
        before = services.assistant.retrieve(question, ["all"])
        WarmUp(services.store).thread.join(120)
        assert isinstance(services.store._question_encoder, OpenVinoQuestionEncoder)
        after = services.assistant.retrieve(question + " ", ["all"])
        # bfloat16 vectors: the same best passages (all that packing takes here); ranks past
        # the tenth may swap (60 sample and public questions: 19 of them, never the top ten).
        # The two Chinese passages kept among them (retrieve.crosslang_reserve) are the
        # multilingual space's near-ties for an English question, and are left out.
        def english(passages: list[Passage]) -> list[str]:
            return [p.chunk_id for p in passages[:10] if detect_lang(p.text) == "en"]

        assert english(after) == english(before)
    finally:
        services.close()
