"""The optional cross-encoder reranker (`retrieve.reranker` in config; off by default, since no
cross-encoder ships offline). It re-orders the fused candidates by a (question, passage) score.

    reranker = load_reranker(settings.retrieve, device="cpu")   # None when not configured
    reranker.rerank("年假几天？", passages)[0].score -> 0.93
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from core.errors import ConfigError
from core.ports import Reranker
from core.settings.retrieve import RetrieveSettings
from core.types import Passage

logger = logging.getLogger(__name__)


class CrossEncoderReranker:
    """sentence-transformers' CrossEncoder behind the `Reranker` interface."""

    def __init__(self, model: str, device: str) -> None:
        from sentence_transformers import CrossEncoder

        try:
            self._model = CrossEncoder(model, device=device)
        except OSError as exc:
            raise ConfigError(
                f"retrieve.reranker {model!r} could not be loaded offline ({exc}); name a local "
                "folder holding a cross-encoder, or set it to \"\" to turn reranking off"
            ) from exc
        logger.info("reranker %s loaded", model)

    def rerank(self, question: str, passages: Sequence[Passage]) -> list[Passage]:
        if not passages:
            return []
        scores = self._model.predict([(question, p.text) for p in passages])
        scored = [replace(p, score=float(s)) for p, s in zip(passages, scores, strict=True)]
        return sorted(scored, key=lambda p: -p.score)


def load_reranker(settings: RetrieveSettings, device: str) -> Reranker | None:
    return CrossEncoderReranker(settings.reranker, device) if settings.reranker else None
