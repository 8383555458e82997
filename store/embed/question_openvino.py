"""Questions embedded by the passage embedder's OpenVINO export, in bfloat16 on one thread: for
a process that answers many questions (the app), the fastest path for one short text.

Measured on one ~12-token question on the 2-core machine (load ~4, docs/benchmarks-history.md, "cold
start and overhead, second pass"): the numpy encoder (`store/embed/question_numpy.py`) 12-21 ms;
this export in float32 on one thread with one kept request 3-5 ms, vectors equal to numpy's (cosine
1.0 to within 1e-6). It loads slower (OpenVINO's import and the compiled model: ~0.9 s against
numpy's ~0.5 s cold), so a one-question `kb ask` keeps numpy and the app switches to this once it is
loaded in the background (`ui.wiring.WarmUp`).

bfloat16 (AMX) rather than float32 ("overhead and 1M, third pass", 40 questions x3, load ~1): 6.2
against 9.0 ms p50 a question, cosine >= 0.99998 to float32's vectors; two threads in float32 were
as fast (6.3 ms) but wait for the second core on a busy machine. `kb eval` over both public sets
with questions on this encoder: every figure equal in both precisions but one, public2's English
paraphrase mrr@10 (0.750 -> 0.751).

Questions of up to 32 tokens run on a model compiled for that one shape, padded and masked
(cosine >= 0.99999 to the unpadded vectors over the 250 dev questions), longer ones on the
dynamic model. In the 2-core machine's runs with 0.3 s of idle before each question (as the
app waits between questions): 6.0-7.1 ms p50 a question against 8.4-10.5 ms on the dynamic
model (why the dynamic one is slower after idle was not established); back to back the two
are equal (~5 ms). The second compiled model costs ~100 MB of memory and ~0.3 s of loading;
a 64-token one would cost as much again for questions that are rarely that long
(docs/benchmarks-history.md, "overhead and 1M, fifth pass").

    encoder = open_openvino_question_encoder(settings.embed)   # None without an export on disk
    encoder.embed_batch(["How many days of leave?"]).shape -> (1, 384)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.config import EmbedSettings
from core.ports import Vectors
from store.embed.openvino import MODEL_FILE, Export, compile_cached, padded, pool

logger = logging.getLogger(__name__)

PRECISION = "bf16"  # INFERENCE_PRECISION_HINT ("f32": the numpy encoder's vectors within 1e-6)
FIXED_WIDTHS = (32,)  # tokens ([CLS] and [SEP] included) of the fixed-shape models


class OpenVinoQuestionEncoder:
    """`Embedder.embed_batch` for questions on an existing OpenVINO export (never converts)."""

    def __init__(self, export: Path, name: str) -> None:
        import openvino

        info = Export.read(export)
        self.name = name
        self.dim = info.dim
        self.max_tokens = info.max_tokens
        self._inputs = list(info.inputs)
        self._cls = info.cls
        self._tokenizer = info.tokenizer()
        self._pad_id = info.pad_id
        config = {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": PRECISION}
        core, model_file, cache = openvino.Core(), str(export / MODEL_FILE), export / "compiled"
        # width -> request (None: the dynamic model); padding needs a mask to hide it
        widths = FIXED_WIDTHS if "attention_mask" in self._inputs else ()
        self._requests: dict[int | None, Any] = {
            width: compile_cached(core, model_file, cache, config, width).create_infer_request()
            for width in (*[w for w in widths if w <= self.max_tokens], None)
        }
        self._lock = threading.Lock()  # one request each, used by one question at a time

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors, one text at a time, each on the narrowest fixed-shape model it fits
        (padded, the padding masked), else on the dynamic one.

        embed_batch(["a", "b"]).shape -> (2, dim)"""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            tokens = self._tokenizer.encode(text.strip()).ids
            width = next((w for w in self._requests if w and len(tokens) <= w), None)
            feeds, mask = padded([tokens], width or len(tokens), self._pad_id, self._inputs)
            with self._lock:  # pooled before the request is used again
                hidden = self._requests[width].infer(feeds)[0]
                out[i] = pool(np.asarray(hidden, dtype=np.float32), mask, self._cls)[0]
        return out

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes in the model, without the [CLS]/[SEP] pair (truncated)."""
        return [len(e.ids) - 2 for e in self._tokenizer.encode_batch(list(texts))]


def open_openvino_question_encoder(settings: EmbedSettings) -> OpenVinoQuestionEncoder | None:
    """The question encoder on the passage embedder's export, or None where there is none to use:
    another runtime, openvino not installed, the model not local, or not converted yet (ingest
    converts it; a query process never does)."""
    if settings.runtime != "openvino":
        return None
    try:
        from store.embed.embedder import export_root, resolve_model_path
        from store.embed.openvino import export_dir, local_folder

        export = export_dir(export_root(settings), local_folder(resolve_model_path(settings.model)))
        if not (export / "embedder.json").is_file():
            return None
        return OpenVinoQuestionEncoder(export, settings.model)
    except Exception as exc:  # noqa: BLE001  any failure: the numpy encoder goes on
        logger.info("questions stay on numpy: no OpenVINO question encoder (%s)", exc)
        return None
