"""Filling the passage budget: hits, their neighbours (small-to-big), more hits; and
`kb retrieve --questions --json` returning exactly what is packed (real Chroma, real files)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

from click.testing import CliRunner

from assistant.pack import render_passages
from assistant.window import estimate_tokens, fill_budget
from core.text import CJK_RUN
from core.types import Passage
from ui.cli import main

REPO = Path(__file__).resolve().parents[2]


WORDS = "leave travel budget laptop badge parental sick expense hotel flight vpn phishing".split()


def chunk(doc: str, ordinal: int, score: float = 0.0, section: str = "s") -> Passage:
    """A passage whose text no other chunk's resembles (packing drops near-duplicates)."""
    seed = ord(doc) * 7 + ordinal * 5
    words = " ".join(WORDS[(seed + i * i) % len(WORDS)] + str(seed + i) for i in range(8))
    text = f"{doc} chunk {ordinal} says {words}. It ends with {words.upper()}. "
    return Passage(f"{doc}-{ordinal}", doc, f"{doc}.pdf", text, (section,), ordinal + 1,
                   ordinal + 1, score, title=doc, ordinal=ordinal)


def neighbours_in(corpus: list[Passage]):  # type: ignore[no-untyped-def]
    def around(p: Passage) -> list[Passage]:
        return [
            Passage(**{**q.__dict__, "score": p.score})
            for q in corpus
            if q.doc_id == p.doc_id and q.section == p.section and abs(q.ordinal - p.ordinal) == 1
        ]

    return around


def test_estimate_tokens() -> None:
    assert estimate_tokens("年假5天 annual") == 5
    assert estimate_tokens("") == 0
    block = "[1] 《年休假》\n年假5天 annual\n\n[2] 《年休假》\n年假5天 annual"
    cjk = sum(map(len, CJK_RUN.findall(block)))  # the whole block's, in one pass
    assert estimate_tokens(block) == cjk + math.ceil((len(block) - cjk) / 4)  # line by line
    assert estimate_tokens(block) == cjk + math.ceil((len(block) - cjk) / 4)  # lines kept


def test_hits_fill_the_budget_and_the_last_is_cut() -> None:
    hits = [chunk("a", 0, 3.0), chunk("b", 0, 2.0), chunk("c", 0, 1.0)]
    budget = estimate_tokens(render_passages(hits)) - 10  # the last one's second sentence won't fit
    packed = fill_budget(hits, budget, estimate_tokens)
    assert [p.doc_id for p in packed] == ["a", "b", "c"]
    assert estimate_tokens(render_passages(packed)) <= budget
    assert packed[2].text == hits[2].text.split(". ")[0] + "."  # cut at its sentence end


def test_hits_bring_their_neighbours_of_the_same_section_only() -> None:
    corpus = [chunk("a", i) for i in range(5)] + [chunk("a", 5, section="other")]
    hits = [Passage(**{**corpus[2].__dict__, "score": 2.0}),
            Passage(**{**corpus[4].__dict__, "score": 1.0})]
    packed = fill_budget(hits, 10_000, estimate_tokens, neighbours_in(corpus), hit_share=0.5)
    # a2 widened to a1..a3, then a4 joins it: one passage a1..a4, a5 is another section
    assert len(packed) == 1
    for o in (1, 2, 3, 4):
        assert f"a chunk {o} " in packed[0].text
    assert "a chunk 0 " not in packed[0].text and "a chunk 5 " not in packed[0].text
    assert (packed[0].page, packed[0].page_end) == (2, 5)


def test_neighbours_come_only_within_the_budget_and_after_the_hits_share() -> None:
    corpus = [chunk("a", i) for i in range(3)] + [chunk("b", i) for i in range(3)]
    hits = [Passage(**{**corpus[1].__dict__, "score": 2.0}),
            Passage(**{**corpus[4].__dict__, "score": 1.0})]
    both = estimate_tokens(render_passages(hits))
    # room for both hits and nothing more: no neighbour squeezes a hit out
    packed = fill_budget(hits, both, estimate_tokens, neighbours_in(corpus), hit_share=1.0)
    assert [p.chunk_id for p in packed] == ["a-1", "b-1"]
    assert [p.text for p in packed] == [h.text for h in hits]


def test_kb_retrieve_prints_what_is_packed(make_settings, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "data" / "samples" / "docs", docs)
    settings = make_settings()
    store = str(settings.store_path())
    runner = CliRunner()
    env = {"KB_EMBED_CACHE": settings.embed.cache}
    assert runner.invoke(main, ["ingest", str(docs), "--store", store], env=env).exit_code == 0
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"id": "q1", "question": "How many days of annual leave carry over?"})
        + "\n"
        + json.dumps({"id": "q2", "question": "出差住宿标准是多少？"}, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    result = runner.invoke(
        main, ["retrieve", "--questions", str(questions), "--json", "--store", store], env=env
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [line["id"] for line in lines] == ["q1", "q2"]
    for line in lines:
        passages = line["passages"]
        assert passages and [p["rank"] for p in passages] == list(range(1, len(passages) + 1))
        as_packed = [
            Passage(p["chunk_id"], "", p["file"], p["text"], (), p["page"], p["page_end"],
                    title=p["title"])
            for p in passages
        ]
        # the printed block is within the window's passage budget (4096 - 512 answer tokens)
        assert estimate_tokens(render_passages(as_packed)) < 4096 - 512
        assert all(p["page"] is None or p["page"] <= p["page_end"] for p in passages)
    # the prompt shows passages in document order (prefix caching); the best one is among them
    assert any(p["file"].startswith("差旅费管理办法-2024") for p in lines[1]["passages"])


def test_a_widened_passage_still_cites_the_page_of_the_quoted_chunk() -> None:
    from assistant.cite import verify

    on_3 = Passage("d-0", "d", "d.pdf", "Leave requests go to your manager first.", ("s",),
                   3, 3, 2.0, title="d", ordinal=0)
    on_4 = Passage("d-1", "d", "d.pdf", "Parental leave lasts twelve weeks at full pay.",
                   ("s",), 4, 4, 2.0, title="d", ordinal=1)
    packed = fill_budget([on_3], 10_000, estimate_tokens, neighbours_in([on_3, on_4]),
                         hit_share=0.5)
    assert len(packed) == 1 and (packed[0].page, packed[0].page_end) == (3, 4)
    checked = verify("Parental leave lasts twelve weeks [1].", packed, min_support=0.5)
    assert [(c.page, c.supported) for c in checked.citations] == [(4, True)]
    first = verify("Leave requests go to your manager [1].", packed, min_support=0.5)
    assert [c.page for c in first.citations] == [3]
