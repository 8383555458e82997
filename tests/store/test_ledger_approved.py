"""Approved answers in the ledger, on both dialects: saved with their citations, listed
suspended first, removed; suspended in the same transaction that makes a cited document's new
version live, deletes it or swaps in a full re-index without the cited passage; re-approved by
saving again."""

from __future__ import annotations

import dataclasses

from core.types import ApprovedAnswer, ApprovedCitation
from store.ledger import Ledger
from tests.store.test_ledger import chunks, ledger, meta  # noqa: F401  (the fixture)

SHA = "ab" * 32


def approved(doc_id: str = "d1", chunk: str = "d1-0", **changes: object) -> ApprovedAnswer:
    cited = ApprovedCitation(1, chunk, doc_id, SHA, f"{doc_id}.pdf", 1, "章 › 节0", "用户")
    answer = ApprovedAnswer(0, "年假几天？", "5 天 [1]", "alice", ("How many days?",), "zh",
                            ("hr",), citations=(cited,))
    return dataclasses.replace(answer, **changes)


def test_saved_listed_edited_and_removed(ledger: Ledger) -> None:  # noqa: F811
    ledger.replace_document(meta("d1"), chunks("d1", 2), [["a"]] * 2)
    before = ledger.approved_generation()
    answer_id = ledger.save_approved(approved(), now=1000.0)
    assert answer_id > 0 and ledger.approved_generation() > before
    saved = ledger.approved_answer(answer_id)
    assert saved is not None and saved.status == "active" and saved.approved_at == 1000.0
    assert saved.variants == ("How many days?",) and saved.groups == ("hr",)
    assert saved.citations == approved().citations
    edited = dataclasses.replace(approved(), id=answer_id, answer="6 天 [1]", author="bob")
    assert ledger.save_approved(edited, now=2000.0) == answer_id
    again = ledger.approved_answer(answer_id)
    assert again is not None and (again.answer, again.author, again.approved_at) == (
        "6 天 [1]", "bob", 2000.0)
    assert ledger.save_approved(dataclasses.replace(edited, id=answer_id + 99)) == 0
    assert ledger.remove_approved(answer_id) and not ledger.remove_approved(answer_id)
    assert ledger.approved_answers() == []


def test_a_new_version_or_a_deletion_suspends_the_answers_citing_it(ledger: Ledger) -> None:  # noqa: F811
    ledger.replace_document(meta("d1"), chunks("d1", 2), [["a"]] * 2)
    ledger.replace_document(meta("d2"), chunks("d2", 1), [["b"]])
    on_d1 = ledger.save_approved(approved())
    on_d2 = ledger.save_approved(approved("d2", "d2-0"))
    # the same content again (an unchanged re-ingest): nothing suspended
    ledger.replace_document(meta("d1"), chunks("d1", 2), [["a"]] * 2)
    assert {a.status for a in ledger.approved_answers()} == {"active"}
    generation = ledger.approved_generation()
    changed = dataclasses.replace(meta("d1"), sha256="cd" * 32)
    ledger.replace_document(changed, chunks("d1", 2), [["a"]] * 2)
    first = ledger.approved_answers()[0]  # suspended ones first
    assert first.id == on_d1 and first.status == "suspended"
    assert first.suspended_reason.startswith("d1.pdf changed on ")
    assert ledger.approved_generation() > generation
    ledger.delete_document("d2")
    gone = ledger.approved_answer(on_d2)
    assert gone is not None and gone.status == "suspended"
    assert gone.suspended_reason.startswith("d2.pdf deleted on ")
    assert [a.id for a in ledger.approved_answers("suspended")] == [on_d1, on_d2]
    # re-approved against the new version: active again
    fresh = dataclasses.replace(approved(), id=on_d1, citations=(dataclasses.replace(
        approved().citations[0], sha256="cd" * 32),))
    ledger.save_approved(fresh)
    assert ledger.approved_answer(on_d1).status == "active"  # type: ignore[union-attr]


def test_a_full_reindex_without_the_cited_passage_suspends(ledger: Ledger) -> None:  # noqa: F811
    ledger.replace_document(meta("d1"), chunks("d1", 3), [["a"]] * 3)
    kept = ledger.save_approved(approved(chunk="d1-0"))
    lost = ledger.save_approved(approved(chunk="d1-2"))
    ledger.stage_chunks(chunks("d1", 2), [["a"]] * 2)
    ledger.swap_in_staging([(meta("d1"), "ok", "", 2)], "kb_chunks_2", ledger.generation())
    assert ledger.approved_answer(kept).status == "active"  # type: ignore[union-attr]
    gone = ledger.approved_answer(lost)
    assert gone is not None and gone.status == "suspended"
    assert "re-indexed" in gone.suspended_reason and "passage is gone" in gone.suspended_reason
