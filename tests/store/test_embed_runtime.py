"""The embedder's runtimes (embed.runtime): the OpenVINO export of the bundled model against
sentence-transformers on torch in float32, the export kept and reused, models that cannot be
converted falling back to torch with one log line, and a CLS-pooling BERT (the shape of
BAAI/bge-small-zh-v1.5, the Chinese-capable model config.toml suggests) converted too."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from core.config import EmbedSettings, load_settings
from store.embed.embedder import (
    CachedEmbedder,
    SentenceTransformerEmbedder,
    load_embedder,
    on_cpu,
    resolve_model_path,
)
from store.embed.openvino import (
    MODEL_FILE,
    OpenVinoEmbedder,
    compile_cached,
    export_dir,
    local_folder,
)
from tests.support.fakes import FakeEmbedder
from tests.support.tiny_bert import tiny_bert

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # OpenVINO exports and compiles, torch for the reference vectors

PASSAGES = [
    "Annual leave: employees accrue 1.67 days of paid leave per month of service.",
    "年假：员工累计工作已满1年不满10年的，年休假5天；已满10年不满20年的，年休假10天。",
    "Travel › Lodging\n| City tier | Cities | Hotel limit (CNY/night) |\n| 1 | Beijing | 600 |",
    "出差住宿标准是多少？",
    "ok",
    # longer than the model's 256 tokens: both runtimes truncate it the same way
    " ".join(["Expenses must be filed within 30 days with receipts attached."] * 40),
    "第四十七条 经济补偿按劳动者在本单位工作的年限，每满一年支付一个月工资的标准向劳动者支付。" * 3,
]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("exports")


def settings_for(exports: Path, **values: object) -> EmbedSettings:
    return replace(EmbedSettings(), export_dir=str(exports), **values)  # type: ignore[arg-type]


def test_openvino_vectors_match_torch_float32(exports: Path) -> None:
    openvino = load_embedder(settings_for(exports))
    torch = load_embedder(settings_for(exports, runtime="torch"))
    assert isinstance(openvino, OpenVinoEmbedder)
    assert isinstance(torch, SentenceTransformerEmbedder)
    assert (openvino.dim, openvino.max_tokens) == (torch.dim, torch.max_tokens)
    ours = openvino.embed_batch(PASSAGES)  # one call: batches mix lengths and languages
    reference = torch.embed_batch(PASSAGES)
    assert ours.dtype == np.float32 and ours.shape == reference.shape
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert cosines(ours, reference).min() >= 0.99
    # each text alone (the one-thread path questions take) gives the same vector
    alone = np.vstack([openvino.embed_batch([text]) for text in PASSAGES])
    assert cosines(alone, ours).min() >= 0.999
    assert openvino.count_tokens_many(PASSAGES) == torch.count_tokens_many(PASSAGES)


def test_the_export_is_made_once_and_reused(
    exports: Path, caplog: pytest.LogCaptureFixture
) -> None:
    load_embedder(settings_for(exports))  # made by the test above, or here
    caplog.set_level(logging.INFO, logger="store.embed.openvino")
    started = time.perf_counter()
    again = load_embedder(settings_for(exports))
    assert isinstance(again, OpenVinoEmbedder)
    assert not [r for r in caplog.records if "converting" in r.getMessage()]
    assert len([p for p in exports.iterdir() if p.is_dir()]) == 1
    assert time.perf_counter() - started < 30  # a load, not a conversion (generous: shared CPU)


def test_each_config_compiles_for_itself_whatever_another_cached_first(
    exports: Path, tmp_path: Path
) -> None:
    """A float32 compile cached first is never imported for the other configs (bfloat16 by
    default on this machine's AMX): OpenVINO names its cached model by the model alone, and the
    import gave vectors of noise (one thread), NaN (all cores) or a crash (streams)."""
    import openvino

    load_embedder(settings_for(exports))
    folder = local_folder(resolve_model_path(EmbedSettings().model))
    model = str(export_dir(exports, folder) / MODEL_FILE)
    ids = np.array([[101, 2129, 2116, 2420, 102]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    inputs = [i.get_any_name() for i in openvino.Core().read_model(model).inputs]

    def hidden(config: dict[str, object], cache: Path | None) -> np.ndarray:
        core = openvino.Core()
        compiled = (
            compile_cached(core, model, cache, config)
            if cache
            else core.compile_model(model, "CPU", config)
        )
        return np.asarray(compiled.create_infer_request().infer({k: feeds[k] for k in inputs})[0])

    hidden({"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"}, tmp_path)
    for config in ({"INFERENCE_NUM_THREADS": 1}, {}):  # the passage embedder's one-thread, all-core
        assert np.allclose(hidden(config, tmp_path), hidden(config, None), atol=1e-4)


def tiny_sentence_model(folder: Path, pooling: str, dense: bool = False) -> Path:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (
        Dense,
        Normalize,
        Pooling,
        Transformer,
    )
    from transformers import BertModel

    bert = tiny_bert(BertModel, folder / "bert")
    transformer = Transformer(str(bert), max_seq_length=128)
    modules: list[object] = [transformer, Pooling(32, pooling_mode=pooling)]
    if dense:
        modules.append(Dense(32, 16))
    modules.append(Normalize())
    model = SentenceTransformer(modules=modules, device="cpu")  # type: ignore[arg-type]
    model.save(str(folder / "st"))
    return folder / "st"


def test_a_cls_pooling_bert_converts_and_matches_torch(exports: Path, tmp_path: Path) -> None:
    model = str(tiny_sentence_model(tmp_path, "cls"))
    openvino = load_embedder(settings_for(exports, model=model))
    torch = load_embedder(settings_for(exports, model=model, runtime="torch"))
    assert isinstance(openvino, OpenVinoEmbedder)
    assert cosines(openvino.embed_batch(PASSAGES), torch.embed_batch(PASSAGES)).min() >= 0.99


def test_a_model_that_does_not_convert_runs_on_torch_with_one_line(
    exports: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = str(tiny_sentence_model(tmp_path, "mean", dense=True))
    caplog.set_level(logging.WARNING)
    embedder = load_embedder(settings_for(exports, model=model))
    assert isinstance(embedder, SentenceTransformerEmbedder)
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and "Dense" in lines[0] and "using torch" in lines[0]
    assert embedder.embed_batch(["年假"]).shape == (1, 16)


class CountingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_batch(self, texts):  # type: ignore[no-untyped-def]
        self.texts += list(texts)
        return super().embed_batch(texts)


def test_identical_passage_text_is_embedded_once(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, tmp_path / "cache.sqlite")
    try:
        first = cached.embed_batch(["年假", "報銷", "年假"])
        second = cached.embed_batch(["報銷", "sick leave"])  # another document, same passage
    finally:
        cached.close()
    assert inner.texts == ["年假", "報銷", "sick leave"]
    assert np.array_equal(first[0], first[2]) and np.array_equal(first[1], second[0])


def test_the_shipped_device_auto_runs_openvino_on_a_machine_without_a_gpu(
    exports: Path,
) -> None:
    """embed.device ships as "auto"; without an NVIDIA driver that is the CPU, so the shipped
    runtime (OpenVINO) is the one used, decided without importing torch."""
    assert on_cpu("cpu") and not on_cpu("cuda") and not on_cpu("cuda:1")
    if not on_cpu("auto"):
        pytest.skip("this machine has an NVIDIA driver: auto means the GPU, so torch")
    shipped = load_settings(REPO / "config.toml", environ={}).embed
    assert shipped.device == "auto" and shipped.runtime == "openvino"
    assert isinstance(load_embedder(replace(shipped, export_dir=str(exports))), OpenVinoEmbedder)


def test_many_batches_run_on_the_streams_each_text_as_alone(exports: Path) -> None:
    """A call of several batches runs them on the throughput streams (ingest waves): each
    text gets the vector it gets alone, whatever batch it shares, in its own row."""
    openvino = load_embedder(settings_for(exports, batch_size=4))
    assert isinstance(openvino, OpenVinoEmbedder)
    texts = [f"{passage} ({n})" for n, passage in enumerate(PASSAGES * 3)]  # 21 texts, 6 batches
    together = openvino.embed_batch(texts)
    assert "throughput" in openvino._compiled
    alone = np.vstack([openvino.embed_batch([text]) for text in texts])
    assert cosines(together, alone).min() > 0.999
