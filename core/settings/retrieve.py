"""The `[retrieve]` section: how a question is searched (candidates, rank fusion and its weights,
the paraphrase table, the answerability model) and across languages (docs/crosslang.md: the bridge's
keys are `retrieve.bilingual*`, the space's `retrieve.crosslang_*`, names kept from before the two
sides had these names); core/config.py reads it with the other sections. Its research knobs are
marked `tuning` and measured in docs/tuning.md.

    RetrieveSettings().top_k -> 30
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.settings.fields import doc, tuning


@dataclass(frozen=True)
class RetrieveSettings:
    top_k: int = field(default=30, metadata=tuning("candidates handed to packing, at most"))
    candidates: int = field(default=50, metadata=tuning("candidates per retriever before fusion"))
    dense_weight: float = field(default=1.0, metadata=tuning("RRF weight of the dense ranks"))
    lexical_weight: float = field(default=1.0, metadata=tuning("RRF weight of the BM25 ranks"))
    coverage_weight: float = field(default=1.0, metadata=tuning("RRF weight, term coverage"))
    coverage_weight_en: float = field(default=0.0, metadata=tuning("the same, English questions"))
    title_weight: float = field(
        default=0.3, metadata=tuning("RRF weight, passages of a document the question names")
    )
    amount_weight: float = field(
        default=0.5, metadata=tuning("RRF weight, passages stating the amount a question asks for")
    )
    owner_weight: float = field(
        default=1.0, metadata=tuning("RRF weight, passages of the organisation a question names")
    )
    owner_gate: bool = field(
        default=True,
        metadata=tuning("a question naming only other-language documents' owner crosses over"),
    )
    spelling: bool = field(
        default=True, metadata=tuning("BM25 also reads a misspelt word as the library spells it")
    )
    rrf_k: int = field(default=60, metadata=tuning("RRF constant"))
    history_weight: float = field(
        default=0.5, metadata=tuning("BM25 weight of the words a follow-up's history supplies")
    )
    hit_share: float = field(
        default=0.9, metadata=tuning("share of the passage budget for hits before neighbours")
    )
    reranker: str = field(default="", metadata=doc("cross-encoder model; empty: off"))
    synonyms: str = field(
        default="", metadata=doc("question-side paraphrase table (TOML); empty: the shipped one")
    )
    answerable_model: str = field(
        default="", metadata=doc("answerability model (JSON); empty: the shipped one")
    )
    refresh_s: float = field(
        default=1.0, metadata=doc("app: seconds between checks for new ledger generations")
    )
    fusion: str = field(
        default="score", metadata=tuning("lexical + dense: 'score' (z-scores) or 'rrf' (ranks)")
    )
    bilingual: bool = field(
        default=True, metadata=doc("also search a question in the other language (glossary)")
    )
    glossary: str = field(
        default="", metadata=doc("your bilingual glossary (TOML) over the shipped one; empty: none")
    )
    bilingual_weight: float = field(
        default=8.0, metadata=tuning("RRF weight of the carried question's ranks per unit of lead")
    )
    bilingual_weight_closed: float = field(
        default=0.0, metadata=tuning("the same, gate closed (its own words cover it better)")
    )
    bilingual_margin: float = field(
        default=0.0, metadata=tuning("coverage the carried words need over the question's own")
    )
    bilingual_evidence: bool = field(
        default=True, metadata=tuning("refuse or answer on the carried words' evidence too")
    )
    bilingual_held: float = field(
        default=0.3, metadata=tuning("gate shut when its own top passages hold this share of it")
    )
    bilingual_dense_gate: bool = field(
        default=True, metadata=tuning("multilingual space on: its gap gates the bridge, not held")
    )
    bilingual_dense_margin: float = field(
        default=-0.06, metadata=tuning("that gate: best other-language cosine minus best same")
    )
    bilingual_dense_margin_en: float = field(
        default=-0.08, metadata=tuning("the same, English questions")
    )
    translate: str = field(
        default="off", metadata=doc('"model": the served model translates questions; "off"')
    )
    crosslang_weight: float = field(
        default=1.75, metadata=tuning("RRF weight, other-language passages (multilingual space)")
    )
    crosslang_margin: float = field(
        default=-0.06, metadata=tuning("gate: best other-language cosine minus best same-language")
    )
    crosslang_reserve: int = field(
        default=2, metadata=tuning("other-language passages kept near the top: best per document")
    )
    crosslang_evidence: bool = field(
        default=True, metadata=tuning("refuse or answer on other-language passages' evidence too")
    )
    crosslang_place: int = field(
        default=5, metadata=tuning("... just after this many passages, whatever the gate says")
    )
