"""The organisation a question names (assistant/retrieve/owners.py): the documents whose titles
lead with its name, and a question naming only other-language documents' owner crossing over."""

from __future__ import annotations

from assistant.retrieve.owners import OwnerIndex

TITLES = {
    "s1": "Sourcegraph Handbook: Time Off and Leave",
    "s2": "Sourcegraph Handbook: Travel and Expenses",
    "f1": "18F / TTS Handbook: Leave and Time Off",
    "f2": "18F / TTS Handbook: Travel Guide",
    "z1": "中华人民共和国劳动合同法（2012年修正）",
    "z2": "职工带薪年休假条例",
}


def test_a_question_naming_an_organisation_finds_its_documents() -> None:
    owners = OwnerIndex(TITLES)
    assert owners.named("How many weeks of parental leave does Sourcegraph give?") == {"s1", "s2"}
    assert owners.named("Sourcegraph 员工生孩子可以休几周育儿假？") == {"s1", "s2"}
    assert owners.named("Can my last day at TTS be a federal holiday?") == {"f1", "f2"}
    assert owners.named("18F travel rules") == {"f1", "f2"}


def test_words_every_family_shares_and_topics_name_no_owner() -> None:
    owners = OwnerIndex(TITLES)
    assert owners.named("What does the handbook say about leave and time off?") == set()
    assert owners.named("试用期工资最低不能低于多少？") == set()
    assert OwnerIndex({"a": "Acme: Leave", "b": "Beta: Leave"}).named("Acme leave") == set()


def test_every_sides_candidates_of_the_named_organisation_rank_together() -> None:
    from types import SimpleNamespace

    from assistant.retrieve.rankings import Query, by_owner
    from assistant.retrieve.snapshot import Snapshot

    docs = {d: SimpleNamespace(meta=SimpleNamespace(lang="zh" if d.startswith("z") else "en"))
            for d in TITLES}  # fmt: skip
    snap = SimpleNamespace(owners=OwnerIndex(TITLES), doc_ids=["s1", "z1", "f1", "s2"],
                           row_of={"a": 0, "b": 1, "c": 2, "d": 3}, docs=docs)  # fmt: skip
    query = Query("Sourcegraph 员工生孩子可以休几周带薪育儿假？", [], None, 50)  # type: ignore[arg-type]
    candidates = [("b", 3.0), ("a", 2.0), ("c", 1.0), ("d", 0.5)]  # lexical, dense, the space's
    assert by_owner(snap, query, candidates) == {"a": 0, "d": 0}  # type: ignore[arg-type]
    # a Chinese question naming only English documents' organisation crosses over
    assert Snapshot.names_other(snap, query.text, "zh")  # type: ignore[arg-type]
    assert not Snapshot.names_other(snap, query.text, "en")  # type: ignore[arg-type]
    assert not Snapshot.names_other(snap, "试用期工资最低不能低于多少？", "zh")  # type: ignore[arg-type]
