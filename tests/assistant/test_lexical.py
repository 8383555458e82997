"""Tokenizer behaviour and BM25 scores checked against rank_bm25 and bm25s."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assistant.retrieve.lexical import (
    BM25Index,
    TitleIndex,
    load_synonyms,
    name_runs,
    tokenize_query,
)
from core.errors import ConfigError
from core.text import cn_numeral_value, detect_lang, latin_share, other_lang, stem, tokenize

CORPUS = [
    "职工累计工作已满1年不满10年的，年休假5天；已满10年不满20年的，年休假10天。",
    "用人单位由于生产经营需要，经与工会和劳动者协商后可以延长工作时间，每月不得超过三十六小时。",
    "禁止用人单位招用未满十六周岁的未成年人。",
    "You can carry over a maximum of 240 annual leave hours into the next leave year.",
    "Comp time expires one year (26 pay periods) after it is earned.",
    "Receipts are required for lodging, rental cars and airfare.",
    "女职工生育享受98天产假，其中产前可以休假15天。",
]


def test_detect_lang() -> None:
    assert detect_lang("出差住宿标准是多少？") == "zh"
    assert detect_lang("How many days of annual leave can I carry over?") == "en"
    assert detect_lang("PIV卡丢了怎么办？") == "zh"
    assert detect_lang("What does 年假 mean for me?") == "en"
    assert detect_lang("") == "en"
    assert (other_lang("zh"), other_lang("en")) == ("en", "zh")


def test_latin_share_counts_the_letters_of_every_script() -> None:
    assert latin_share("Annual leave") == 1.0
    assert latin_share("연차휴가 leave") == 5 / 9
    assert latin_share("| 200.01 | 400.01 |") == 0.0  # no letters
    assert latin_share("年假 leave") == 5 / 7


def test_english_is_stemmed_and_stop_words_dropped() -> None:
    assert tokenize("The hours are carried over") == ["hour", "carri"]
    assert tokenize("carries") == tokenize("carried") == tokenize("carry")
    assert stem("leaving") == stem("leave")
    assert stem("reimbursement") == stem("reimbursed")


def test_chinese_uses_search_mode_words_and_drops_punctuation() -> None:
    tokens = tokenize("用人单位，应当！")
    assert {"用人", "单位", "用人单位", "应当"} <= set(tokens)
    assert "，" not in tokens and "！" not in tokens


def test_chinese_numerals_yield_arabic() -> None:
    assert cn_numeral_value("十六") == 16
    assert cn_numeral_value("三十六") == 36
    assert cn_numeral_value("二百") == 200
    assert cn_numeral_value("一万二千") == 12000
    assert cn_numeral_value("二〇二四") == 2024
    assert "16" in tokenize("未满十六周岁")
    assert "1" in tokenize("一个月内") and "1" not in tokenize("统一规定")
    assert "36" in tokenize("不得超过三十六小时")
    assert tokenize("放假 4 天")[0] == "放假" and "4" in tokenize("放假 4 天")


def test_bigrams_are_optional() -> None:
    assert "假天" not in tokenize("年休假天数", bigrams=False)
    assert {"年休", "休假"} <= set(tokenize("年休假天数", bigrams=True))


def test_query_synonyms_bridge_paraphrase() -> None:
    q = tokenize_query("公司安排加班，一个月最多多少小时？")
    assert {"延长", "工作", "时间"} <= set(q)
    assert len(q) == len(set(q))
    assert "延长" not in tokenize("公司安排加班")  # chunks are never expanded


def test_synonyms_come_from_an_editable_table(tmp_path: Path) -> None:
    assert load_synonyms()["年假"] == ("年休假",)  # the shipped data file
    table = tmp_path / "syn.toml"
    table.write_text('"报销" = ["费用结算"]\n', encoding="utf-8")
    own = load_synonyms(str(table))
    assert {"费用", "结算"} <= set(tokenize_query("怎么报销？", synonyms=own))
    assert "年休假" not in tokenize_query("年假几天", synonyms=own)  # only the named table
    assert "年休假" not in tokenize_query("年假几天", synonyms=False)
    table.write_text('"报销" = "费用"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="each entry"):
        load_synonyms.__wrapped__(str(table))


@pytest.mark.parametrize(
    ("question", "row"),
    [
        ("加班一个月最多几小时？", 1),  # paraphrase: 加班 vs 延长工作时间
        ("公司能招15岁的暑期工吗？", 2),  # 15岁 vs 十六周岁
        ("How many hours of annual leave can I roll over?", 3),
        ("When does comp time expire?", 4),
        ("生孩子有几天产假？", 6),
        ("干满10年年假几天？", 0),
    ],
)
def test_paraphrased_questions_find_their_passage(question: str, row: int) -> None:
    index = BM25Index.build((str(i), tokenize(t)) for i, t in enumerate(CORPUS))
    assert index.search(tokenize_query(question), 1)[0][0] == str(row)


def _tokenized() -> list[list[str]]:
    return [tokenize(t) for t in CORPUS]


def test_okapi_scores_match_rank_bm25() -> None:
    rank_bm25 = pytest.importorskip("rank_bm25")
    docs = _tokenized()
    ref = rank_bm25.BM25Okapi(docs, k1=1.5, b=0.75, epsilon=0.25)
    index = BM25Index.build([(str(i), d) for i, d in enumerate(docs)], idf="okapi")
    for q in (["年休假", "10"], ["hour", "leav", "leav"], ["用人单位", "未成年人", "x"]):
        np.testing.assert_allclose(index.scores(q), ref.get_scores(q), rtol=1e-5, atol=1e-6)


def test_lucene_scores_match_bm25s() -> None:
    bm25s = pytest.importorskip("bm25s")
    docs = _tokenized()
    ref = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    ref.index(docs, show_progress=False)
    index = BM25Index.build([(str(i), d) for i, d in enumerate(docs)])
    for q in (["年休假", "10"], ["hour", "leav"], ["用人单位", "未成年人"]):
        np.testing.assert_allclose(index.scores(q), ref.get_scores(q), rtol=1e-5, atol=1e-6)


def test_search_respects_allowed_mask_and_k() -> None:
    index = BM25Index.build([("a", ["年假", "天数"]), ("b", ["年假"]), ("c", ["加班"])])
    assert [cid for cid, _ in index.search(["年假"], 5)] == ["b", "a"]
    assert index.search(["年假"], 1) == index.search(["年假"], 5)[:1]
    only_a = index.mask(["a", "unknown"])
    assert [cid for cid, _ in index.search(["年假"], 5, only_a)] == ["a"]
    assert index.search(["年假"], 5, np.zeros(3, dtype=bool)) == []
    assert index.search(["nothing"], 5) == [] and index.search(["年假"], 0) == []
    assert index.row_of("c") == 2
    with pytest.raises(ValueError, match="rows"):
        index.search(["年假"], 5, np.ones(2, dtype=bool))


def test_equal_scores_go_to_the_lower_row() -> None:
    index = BM25Index.build([("z", ["a"]), ("y", ["a"]), ("x", ["a"])])
    assert [cid for cid, _ in index.search(["a"], 3)] == ["z", "y", "x"]


def test_empty_index() -> None:
    index = BM25Index.build([])
    assert len(index) == 0 and index.search(["a"], 3) == []


TITLES = {
    "dsl": "中华人民共和国数据安全法（2021）",
    "lab": "中华人民共和国劳动法（2018年修正）",
    "lcl": "中华人民共和国劳动合同法（2012年修正）",
    "trv": "18F / TTS Handbook: Travel Guide",
}


def test_name_runs_split_chinese_into_characters_and_english_into_content_words() -> None:
    assert name_runs("《数据安全法》Travel Guide: x") == [
        ("数", "据", "安", "全", "法"),
        ("travel", "guid"),
    ]
    assert name_runs("公司 the leave") == []  # a two-character word, one content word


def test_a_question_names_the_document_whose_title_it_quotes() -> None:
    index = TitleIndex(TITLES)
    assert index.named("数据安全法从什么时候开始施行？") == {"dsl": 5}
    assert index.named("按劳动法，每天最多工作多长时间？") == {"lab": 3}
    assert index.named("What does the travel guide say about per diem?") == {"trv": 2}


def test_common_words_shared_with_titles_name_nothing() -> None:
    index = TitleIndex(TITLES)
    assert index.named("公司可以延长劳动时间吗？") == {}  # 劳动 is two characters
    assert index.named("How do I book travel?") == {}  # one word


def test_the_longest_quote_is_measured_across_documents() -> None:
    named = TitleIndex(TITLES).named("劳动合同法和劳动法有什么不同？")
    assert named == {"lcl": 5, "lab": 3}
    assert TitleIndex(TITLES).named("劳动合同法和劳动法有什么不同？", among={"lab"}) == {"lab": 3}


def test_coverage_of_given_rows_is_the_full_coverage_at_those_rows() -> None:
    index = BM25Index.build((f"c{i}", tokenize(t)) for i, t in enumerate(CORPUS))
    for question in ("年休假几天？", "carry over annual leave hours", "产假 工作时间", "nothing"):
        terms = tokenize_query(question)
        full = index.coverage(terms)
        for rows in ([0], [6, 0, 3], list(range(len(CORPUS))), []):
            assert index.coverage(terms, rows).tolist() == full[rows].tolist()


def test_scores_of_given_rows_are_the_full_scores_at_those_rows() -> None:
    index = BM25Index.build((f"c{i}", tokenize(t)) for i, t in enumerate(CORPUS))
    for question in ("年休假几天？", "carry over annual leave hours", "产假 工作时间", "nothing"):
        terms = tokenize_query(question)
        full = index.scores(terms)
        for rows in ([0], [6, 0, 3], list(range(len(CORPUS))), []):
            assert index.scores_at(terms, rows).tolist() == full[rows].tolist()
    # a term repeated in the query counts each time, as in `scores`
    assert index.scores_at(["年休假", "年休假"], [0]).tolist() == (
        index.scores(["年休假", "年休假"])[[0]].tolist()
    )


def test_weighted_terms_count_their_weight_in_scores_coverage_and_search() -> None:
    index = BM25Index.build([("a", ["伙食", "补助"]), ("b", ["住宿", "标准", "出差"])])
    terms = ["伙食", "补助", "住宿", "标准", "出差"]
    weight = {"住宿": 0.5, "标准": 0.5, "出差": 0.5}
    plain, weighed = index.scores(terms), index.scores(terms, weight)
    assert weighed[0] == plain[0] and weighed[1] == pytest.approx(plain[1] * 0.5)
    assert index.scores_at(terms, [1], weight).tolist() == weighed[[1]].tolist()
    halved = index.coverage(terms, [1])[0] / 2
    assert index.coverage(terms, [1], weight)[0] == pytest.approx(halved)
    assert [c for c, _ in index.search(terms, 2)] == ["b", "a"]  # three words beat two...
    assert [c for c, _ in index.search(terms, 2, weight=weight)] == ["a", "b"]  # ...at full weight
