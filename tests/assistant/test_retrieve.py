"""Pure parts of retrieval: which lexical candidates a named document lifts."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from assistant.lexical import TitleIndex
from assistant.retrieve import _by_title


def _snapshot() -> Any:
    docs = {"c1": "lab", "c2": "lcl", "c3": "lab", "c4": "dsl"}
    return SimpleNamespace(
        titles=TitleIndex(
            {
                "lab": "中华人民共和国劳动法",
                "lcl": "中华人民共和国劳动合同法",
                "dsl": "中华人民共和国数据安全法",
            }
        ),
        doc_ids=list(docs.values()),
        row_of={cid: i for i, cid in enumerate(docs)},
    )


def test_candidates_of_a_named_document_share_its_rank() -> None:
    lexical = [("c2", 9.0), ("c1", 8.0), ("c4", 7.0), ("c3", 6.0)]
    assert _by_title(_snapshot(), "劳动合同法规定的试用期多长？", lexical) == {"c2": 1}
    assert _by_title(_snapshot(), "劳动合同法和劳动法有什么不同？", lexical) == {
        "c2": 1,
        "c1": 2,
        "c3": 2,
    }


def test_no_named_document_no_ranking() -> None:
    assert _by_title(_snapshot(), "试用期最长多久？", [("c1", 1.0)]) == {}
