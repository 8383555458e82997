from core.text import split_sentences
from core.types import Block
from ingest.chunk import chunk_blocks


def count_chars(texts):
    """A stand-in counter: one token per character (CJK-like)."""
    return [len(t) for t in texts]


def test_split_sentences_keeps_every_character():
    text = "请假需提前申请。报销须在30天内提交！Annual leave is 20 days. Carry over is capped."
    parts = split_sentences(text)
    assert parts[:2] == ["请假需提前申请。", "报销须在30天内提交！"]
    assert "".join(parts).replace(" ", "") == text.replace(" ", "")
    assert len(parts) == 4


def test_chunk_never_crosses_a_heading():
    blocks = [
        Block("年假。" * 5, ("手册", "3 假期")),
        Block("报销。" * 5, ("手册", "4 报销")),
    ]
    chunks = chunk_blocks("d", blocks, count_chars, max_tokens=100, overlap=0)
    assert [c.section for c in chunks] == [("手册", "3 假期"), ("手册", "4 报销")]
    assert "报销" not in chunks[0].text


def test_chunks_respect_size_and_overlap():
    sentences = [f"Sentence number {i} is here." for i in range(30)]
    blocks = [Block(" ".join(sentences), ("Policy",), page=1, page_end=1)]
    chunks = chunk_blocks("d", blocks, count_chars, max_tokens=120, overlap=40)
    assert len(chunks) > 3
    assert all(len(c.text) <= 120 for c in chunks)
    for a, b in zip(chunks, chunks[1:], strict=False):
        last = a.text.split(". ")[-1]
        assert last in b.text  # the tail of one chunk opens the next
    # nothing lost: every sentence is in some chunk
    assert all(any(s in c.text for c in chunks) for s in sentences)


def test_long_sentence_is_windowed():
    blocks = [Block("长" * 500, ())]
    chunks = chunk_blocks("d", blocks, count_chars, max_tokens=100, overlap=10)
    assert all(len(c.text) <= 100 for c in chunks)
    assert "".join(c.text for c in chunks).count("长") >= 500


def test_pages_span_the_sentences():
    blocks = [
        Block("First page text.", (), page=3, page_end=3),
        Block("Second page text.", (), page=4, page_end=4),
    ]
    [chunk] = chunk_blocks("d", blocks, count_chars, max_tokens=200, overlap=0)
    assert (chunk.page, chunk.page_end) == (3, 4)
    assert chunk.text == "First page text.\nSecond page text."


def test_ids_are_stable_and_local_to_changes():
    a = [Block("Unchanged section text.", ("A",)), Block("Old text.", ("B",))]
    b = [Block("Unchanged section text.", ("A",)), Block("New text.", ("B",))]
    first = chunk_blocks("d", a, count_chars, 100, 0)
    second = chunk_blocks("d", b, count_chars, 100, 0)
    assert first[0].id == second[0].id
    assert first[1].id != second[1].id
    assert chunk_blocks("d", a, count_chars, 100, 0) == first


def test_repeated_passages_get_distinct_ids():
    blocks = [Block("Same.", ("A",)), Block("Other.", ("B",)), Block("Same.", ("A",))]
    chunks = chunk_blocks("d", blocks, count_chars, 100, 0)
    assert len({c.id for c in chunks}) == len(chunks)


def test_parent_heading_without_body_leads_its_children():
    blocks = [
        Block("第三章 住宿费", ("第三章 住宿费",), kind="heading"),
        Block("一、住宿标准", ("第三章 住宿费", "一、住宿标准"), kind="heading"),
        Block("一线城市每晚不超过800元。", ("第三章 住宿费", "一、住宿标准")),
        Block("第四章 附则", ("第四章 附则",), kind="heading"),
    ]
    chunks = chunk_blocks("d", blocks, count_chars, 100, 0)
    assert [c.text for c in chunks] == ["一、住宿标准\n一线城市每晚不超过800元。", "第四章 附则"]
    assert chunks[0].embed_text().startswith("第三章 住宿费 › 一、住宿标准\n")


def test_articles_open_new_chunks():
    text = (
        "第一条 为了规范管理，制定本办法。第二条 本办法适用于全体员工。第三条 员工每年享有年休假。"
    )
    chunks = chunk_blocks("d", [Block(text, ("总则",))], count_chars, max_tokens=60, overlap=20)
    assert [c.text[:3] for c in chunks] == ["第一条", "第二条", "第三条"]
