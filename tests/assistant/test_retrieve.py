"""Pure parts of retrieval: which lexical candidates a named document lifts."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from assistant.lexical import TitleIndex
from assistant.retrieve import _by_amount, _by_title


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


def test_candidates_stating_the_asked_amount_keep_lexical_order() -> None:
    texts = {
        "c1": "第四十三条用人单位不得违反本法规定延长劳动者的工作时间。",
        "c2": "第三十八条用人单位应当保证劳动者每周至少休息一日。",
        "c3": "第四十条春节，放假4天。",
    }
    snap = SimpleNamespace(texts=list(texts.values()), row_of={c: i for i, c in enumerate(texts)})
    lexical = [("c1", 9.0), ("c3", 8.0), ("c2", 7.0)]
    assert _by_amount(snap, "公司每周至少要让员工休息几天？", lexical) == ["c3", "c2"]
    assert _by_amount(snap, "休息日可以安排加班吗？", lexical) == []
