"""`Ledger.chunk_batches`: the live chunks in pieces, the same rows as `chunk_table`."""

from __future__ import annotations

from pathlib import Path

from core.types import Chunk, DocMeta
from store.ledger import Ledger


def test_batches_hold_the_rows_of_the_chunk_table_in_its_order(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    for d in ("b", "a", "c"):
        meta = DocMeta(id=d, path=f"{d}.pdf", root="/d", sha256=d, size=1, mtime=0.0)
        chunks = [
            Chunk(f"{d}{i}", d, i, f"text {d} {i}", ("章", str(i % 2)), i + 1, i + 1)
            for i in range(7)
        ]
        ledger.replace_document(meta, chunks, [[d, str(i), "年假"] for i in range(7)])
    whole = ledger.chunk_table()
    batches = list(ledger.chunk_batches(size=5))
    assert [len(b.ids) for b in batches] == [5, 5, 5, 5, 1]
    for column in ("ids", "doc_ids", "ordinals", "texts", "sections", "pages", "tokens"):
        joined = [value for b in batches for value in getattr(b, column)]
        assert joined == getattr(whole, column), column
    assert whole.ids[:2] == ["a0", "a1"]
    ledger.close()
