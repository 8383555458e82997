"""Questions across languages (issue 29): the glossary and CC-CEDICT carry a question's words
into the other language (pure, on the shipped data), and on the sample documents (real files,
ledger and Chroma) an English question finds a Chinese policy and a Chinese question an English
one through the retriever and `kb retrieve`, while a question nothing of which translates is
retrieved exactly as before."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assistant.retrieve.crosslang.bridge import carry
from assistant.retrieve.crosslang.glossary import (
    Dictionary,
    _parse_cedict,
    english_key,
    load_glossary,
)
from core.errors import ConfigError
from ui.cli import main
from ui.wiring import open_services

EN_TO_ZH = "Is there a reimbursement for taxi fares?"  # 日常费用报销规定.docx
ZH_TO_EN = "病假需要什么证明？"  # Employee-Leave-Policy.pdf
NOTHING_TRANSLATES = "xyzzy plugh?"


def test_the_glossary_reads_both_ways() -> None:
    glossary = load_glossary()
    assert english_key("Years of Service") == ("year", "servic")
    assert glossary.en_zh[("sick", "leav")] == ("病假",)
    assert {"sick", "leav"} <= set(glossary.zh_en["病假"])  # and "medical" (medical leave)
    assert "年休假" in glossary.en_zh[english_key("annual leave")]


def test_an_owners_glossary_extends_the_shipped_one(tmp_path: Path) -> None:
    extra = tmp_path / "ours.toml"
    extra.write_text('"hot desk" = ["共享工位"]\n"sick leave" = ["病休"]\n', encoding="utf-8")
    glossary = load_glossary(str(extra))
    assert glossary.en_zh[("hot", "desk")] == ("共享工位",)
    assert glossary.en_zh[("sick", "leav")] == ("病休",)  # the owner's entry replaces ours


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('"sick leave" = "病假"\n', '"sick leave"'),  # not a list
        ('"病假" = ["sick leave"]\n', '"病假"'),  # the wrong way round
        ('sick leave = ["病假"]\n', "line 1"),  # not TOML: tomllib names the line
    ],
)
def test_a_bad_glossary_entry_is_named(tmp_path: Path, text: str, named: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="bad.toml") as caught:
        load_glossary(str(bad))
    assert named in str(caught.value)


def test_cedict_lines_read_both_ways() -> None:
    dictionary = _parse_cedict(
        [
            "# CC-CEDICT",
            "病假 病假 [bing4 jia4] /sick leave/",
            "報銷 报销 [bao4 xiao1] /to submit an expense account; to apply for reimbursement/",
            "張 张 [Zhang1] /surname Zhang/",
        ]
    )
    assert dictionary.zh_en["病假"] == (("sick", "leav"),)
    assert dictionary.zh_en["报销"] == (("appli", "reimburs"),)  # 4 words or more: not a term
    assert dictionary.en_zh[("sick", "leav")] == ("病假",)
    assert "张" not in dictionary.zh_en  # a surname says nothing of meaning


def test_the_packaged_dictionary_carries_words_the_glossary_lacks() -> None:
    dictionary = Dictionary.load()
    carried = carry("怎样申请出差期间的签证费？", "zh", load_glossary(), dictionary)
    assert carried is not None
    assert {"travel", "visa"} <= set(carried.terms)
    english = carry("Can I claim a taxi receipt?", "en", load_glossary(), dictionary)
    assert english is not None and "出租车" in english.terms and "发票" in english.terms
    # glossary terms weigh 1, a word of several senses less
    assert english.weight["出租车"] == 1.0


def test_numbers_and_names_go_across_as_they_are() -> None:
    carried = carry("Sourcegraph 的 401k 计划由哪家机构管理？", "zh", load_glossary(),
                    Dictionary.load())  # fmt: skip
    assert carried is not None
    assert {"sourcegraph", "401"} <= set(carried.terms)


def test_a_question_nothing_of_which_translates_carries_nothing() -> None:
    assert carry(NOTHING_TRANSLATES, "en", load_glossary(), Dictionary.load()) is None
    assert carry("Sourcegraph 401k?", "zh", load_glossary(), Dictionary.load()) is None


def _bilingual(settings: Any, on: bool = True) -> Any:
    """`settings` with the lexical bridge alone (retrieve.bilingual), or with neither it nor
    the multilingual space (both on by default)."""
    return dataclasses.replace(
        settings, retrieve=dataclasses.replace(settings.retrieve, bilingual=on),
        embed=dataclasses.replace(settings.embed, multilingual_model=""),
    )


def _files(services: Any, question: str, k: int = 5) -> list[str]:
    return [p.file for p in services.assistant.retriever.retrieve(question, ["all"]).passages[:k]]


def test_a_question_finds_the_policy_in_the_other_language(sample_settings: Any) -> None:
    services = open_services(_bilingual(sample_settings))
    try:
        assert _files(services, EN_TO_ZH)[0] == "日常费用报销规定.docx"
        assert _files(services, ZH_TO_EN)[0] == "Employee-Leave-Policy.pdf"
        crossing = services.assistant.retriever.retrieve(ZH_TO_EN, ["all"]).bridge_gate
        assert crossing["open"] == 1.0 and crossing["carried"] > crossing["own"]
    finally:
        services.close()
    services = open_services(_bilingual(sample_settings, on=False))
    try:  # the control: without the bridge neither is found first
        assert _files(services, EN_TO_ZH)[0] != "日常费用报销规定.docx"
        assert "Employee-Leave-Policy.pdf" not in _files(services, ZH_TO_EN)
    finally:
        services.close()


def test_untranslatable_words_are_retrieved_exactly_as_before(sample_settings: Any) -> None:
    found: dict[bool, Any] = {}
    for on in (True, False):
        services = open_services(_bilingual(sample_settings, on))
        try:
            found[on] = services.assistant.retriever.retrieve(NOTHING_TRANSLATES, ["all"])
        finally:
            services.close()
    assert found[True].bridge_gate == {}
    assert [(p.chunk_id, p.score) for p in found[True].passages] == [
        (p.chunk_id, p.score) for p in found[False].passages
    ]
    assert found[True].evidence == found[False].evidence


def test_kb_retrieve_finds_the_english_policy_for_a_chinese_question(
    sample_settings: Any,
) -> None:
    store = str(sample_settings.store_path())
    env = {"KB_EMBED_CACHE": sample_settings.embed.cache, "KB_RETRIEVE_BILINGUAL": "true"}
    result = CliRunner().invoke(main, ["retrieve", ZH_TO_EN, "--json", "--store", store], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert not report["abstain"]
    assert "Employee-Leave-Policy.pdf" in {p["file"] for p in report["passages"]}
