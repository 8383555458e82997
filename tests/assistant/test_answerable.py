"""The answerability model: its evidence, its fit (against scikit-learn where installed), its
threshold, and the shipped coefficients file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant.answerable import (
    EVIDENCE,
    FEATURES,
    SHIPPED,
    AnswerableModel,
    _near_spelling,
    asks,
    choose_threshold,
    features,
    fit_language,
    fit_logistic,
    model_json,
)
from assistant.retrieve.lexical import BM25Index, tokenize
from core.errors import ConfigError
from core.types import Passage

TEXTS = [
    "Parental leave lasts 12 weeks at full pay.",
    "Laptops are replaced every three years.",
    "Expenses are filed within 60 days of purchase.",
]


def index() -> BM25Index:
    return BM25Index.build((str(i), tokenize(t)) for i, t in enumerate(TEXTS))


def passage(i: int) -> Passage:
    return Passage(str(i), "d", "d.pdf", TEXTS[i])


def test_evidence_of_an_answered_and_of_an_absent_question() -> None:
    answered = features("How many weeks of parental leave?", [passage(0)], index(), [0], 0.6, 1.0)
    assert answered["rare_coverage"] == pytest.approx(1.0)
    assert answered["absent"] == 0.0 and answered["type_agrees"] == 1.0
    assert (answered["dense"], answered["lexical"]) == (0.6, 1.0)
    # "vpn" and "vendor" are nowhere in the index; the laptop passage states no weeks
    absent = features("How many weeks for the VPN vendor?", [passage(1)], index(), [1], 0.2, 0.1)
    assert absent["absent"] == pytest.approx(2 / 3)  # week, vpn, vendor ("how many" asks)
    assert absent["type_agrees"] == 0.0
    assert absent["rare_coverage"] == 0.0
    assert set(absent) == set(EVIDENCE) >= set(FEATURES)


def test_amount_mass_counts_only_sentences_stating_the_asked_amount() -> None:
    texts = [
        "Parental leave is paid. Every employee gets 12 weeks of leave.",
        "Parental leave lasts 12 weeks at full pay.",
        "Laptops are replaced every three years.",
    ]
    idx = BM25Index.build((str(i), tokenize(t)) for i, t in enumerate(texts))
    scale = math.log1p(len(texts))
    mass = {t: idx.idf(t) or 0.0 for t in ("week", "parental", "leav")}

    def evidence(question: str, rows: list[int]) -> dict[str, float]:
        ps = [Passage(str(i), f"d{i}", "d.pdf", texts[i]) for i in rows]
        return features(question, ps, idx, rows, 0.5, 1.0)

    # one sentence holds "weeks", "parental" and "leave" and states weeks: the whole mass
    whole = sum(mass.values())
    assert evidence("How many weeks of parental leave?", [1])["amount_mass"] == pytest.approx(
        whole / scale, rel=1e-5
    )
    # the first passage names parental leave in one sentence, weeks of leave in another
    split = evidence("How many weeks of parental leave?", [0])["amount_mass"]
    assert split == pytest.approx((mass["week"] + mass["leav"]) / scale, rel=1e-5)
    # a question asking no amount counts the best sentence whatever it states
    assert evidence("Is parental leave paid?", [0])["amount_mass"] > split
    # nothing stating weeks among the passages: no mass at all
    assert evidence("How many weeks of parental leave?", [2])["amount_mass"] == 0.0


def test_documents_is_the_share_of_distinct_documents_in_the_top_five() -> None:
    ps = [Passage(str(i), f"d{i % 2}", "d.pdf", TEXTS[i % 3]) for i in range(6)]
    assert features("leave?", ps, index(), [0, 1, 2, 0, 1, 2], 0.5, 1.0)["documents"] == 0.4
    assert features("leave?", ps[:1], index(), [0], 0.5, 1.0)["documents"] == 0.2


def test_asking_words_are_not_what_is_asked_about() -> None:
    assert asks("mani") and asks("几天") and asks("多少") and asks("有")
    assert not asks("婚假") and not asks("week")


@pytest.mark.slow  # scikit-learn's import (SciPy) takes seconds
def test_fit_matches_scikit_learn() -> None:
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    y = (x @ np.array([1.5, -2.0, 0.5]) + rng.normal(size=200) > 0).astype(np.float64)
    weights = np.where(y == 1, 1.0, 2.0)
    coefficients, intercept = fit_logistic(x, y, weights, l2=1.0)
    ref = sklearn.LogisticRegression(C=1.0, tol=1e-10, max_iter=1000)
    ref.fit(x, y, sample_weight=weights)
    assert coefficients == pytest.approx(list(ref.coef_[0]), abs=1e-4)
    assert intercept == pytest.approx(float(ref.intercept_[0]), abs=1e-4)


def test_threshold_keeps_refusals_of_answerable_questions_within_the_limit() -> None:
    probabilities = [0.9, 0.8, 0.3, 0.2, 0.25, 0.1]
    answerable = [True, True, True, False, False, False]
    assert choose_threshold(probabilities, answerable, 0.0) == pytest.approx(0.275)
    # allowed to refuse one answerable question of three, it still gains nothing by it here
    loose = choose_threshold(probabilities, answerable, 0.34)
    assert loose == pytest.approx(0.275)
    assert choose_threshold([0.5, 0.4], [True, False], 0.0) == pytest.approx(0.45)


def test_a_fitted_model_separates_the_evidence_and_round_trips(tmp_path: Path) -> None:
    good = {"dense": 0.7, "lexical": 1.2, "rare_coverage": 1.0, "sentence_coverage": 0.9,
            "absent": 0.0, "type_agrees": 1.0, "amount_mass": 1.4, "documents": 0.4}
    bad = {"dense": 0.3, "lexical": 0.3, "rare_coverage": 0.2, "sentence_coverage": 0.3,
           "absent": 0.5, "type_agrees": 0.0, "amount_mass": 0.3, "documents": 1.0}
    rows = [(good, True)] * 10 + [(bad, False)] * 5
    model = fit_language(rows, max_refused=0.0)
    assert model.coefficients[FEATURES.index("amount_mass")] > 0
    assert model.coefficients[FEATURES.index("documents")] < 0  # scattered passages
    loaded = AnswerableModel({"en": model})
    assert not loaded.refuses(good, "en") and loaded.refuses(bad, "en")
    assert loaded.refuses(bad, "zh")  # no Chinese model: the English one decides
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model_json({"en": model}, "test")), encoding="utf-8")
    assert AnswerableModel.load(path).models["en"] == model
    # any of the measured evidence can be weighed instead
    names = ("absent", "lexical")
    other = fit_language(rows, max_refused=0.0, names=names)
    assert other.coefficients[0] < 0 < other.coefficients[1]
    path.write_text(json.dumps(model_json({"en": other}, "test", names)), encoding="utf-8")
    reloaded = AnswerableModel.load(path)
    assert reloaded.names == names and reloaded.refuses(bad, "en")


def test_misspelt_words_are_not_absent() -> None:
    vocab = {"flight": 0, "budget": 1}
    assert _near_spelling("flihgt", vocab) and _near_spelling("budjet", vocab)
    assert not _near_spelling("vpn", vocab)  # too short to tell a typo from another word
    assert not _near_spelling("sabbatical", vocab)
    index = BM25Index.build([("0", tokenize("Book flights early."))])
    typo = features("When to book flihgts?", [passage(0)], index, [0], 0.5, 1.0)
    assert typo["absent"] == 0.0


def test_shipped_model_loads_and_a_broken_file_says_what_to_do(tmp_path: Path) -> None:
    model = AnswerableModel.load(SHIPPED)
    assert set(model.models) == {"en", "zh"}
    assert model.names == FEATURES
    broken = tmp_path / "m.json"
    one = {"coefficients": [1.0], "intercept": 0.0, "threshold": 0.5}
    for bad in (
        {"features": ["dense"], "languages": {}},  # no English model to fall back on
        {"features": ["dense"], "languages": {"en": {"coefficients": [1.0]}}},  # no threshold
        {"features": ["colour"], "languages": {"en": one}},  # evidence nobody measures
        {"features": ["dense", "absent"], "languages": {"en": one}},  # one coefficient short
    ):
        broken.write_text(json.dumps(bad))
        with pytest.raises(ConfigError, match="kb abstain fit"):
            AnswerableModel.load(broken)


def test_a_model_file_weighs_the_evidence_it_names(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    one = {"coefficients": [-8.0], "intercept": 4.0, "threshold": 0.5}
    path.write_text(json.dumps({"features": ["absent"], "languages": {"en": one}}))
    model = AnswerableModel.load(path)
    assert model.names == ("absent",)
    assert model.refuses({"absent": 1.0, "dense": 0.9}, "en")
    assert not model.refuses({"absent": 0.0, "dense": 0.1}, "en")


def test_near_spellings_follow_the_vocabulary_of_each_snapshot() -> None:
    """The words grouped by initial are the current vocabulary's, not a previous one's."""
    first, second = {"budget": 0, "flight": 1}, {"flight": 0}
    assert _near_spelling("budjet", first)
    assert not _near_spelling("budjet", second)
    assert _near_spelling("budjet", first) and _near_spelling("flihgt", second)


def test_sentence_terms_are_the_sentences_and_their_tokens() -> None:
    from assistant.answerable import sentence_terms
    from core.text import split_sentences

    text = "年休假十天。Parental leave lasts 12 weeks.\n每周至少休息一日；"
    assert sentence_terms(text) == tuple(
        (s, frozenset(tokenize(s))) for s in split_sentences(text)
    )
    assert sentence_terms(text) is sentence_terms(text)  # cached per text


def test_an_english_question_reads_passages_without_jieba() -> None:
    """Without jieba's words a Chinese sentence keeps every term an English question's can
    match (numbers, numerals' values, English words), so the evidence of an English question
    whose passages include Chinese ones is the same without loading jieba (a second of a cold
    `kb ask`)."""
    from assistant.answerable import sentence_terms

    text = "年休假十天。Parental leave lasts 12 weeks.\n每周至少休息一日；"
    latin = sentence_terms(text, False)
    for (sentence, whole), (same, part) in zip(sentence_terms(text), latin, strict=True):
        assert sentence == same
        assert part == {t for t in whole if t.isascii()}
    assert latin[0][1] == {"10"}


def test_cached_evidence_equals_evidence_tokenized_afresh(make_settings: Any) -> None:
    """On a real store (the sample documents): the evidence of each sample question, its
    passages' terms cached from earlier questions, equals that of tokenizing them again."""
    from assistant import answerable
    from assistant.retrieve.retriever import Retriever
    from store.store import open_store
    from tests.support.stores import ingest_paths

    repo = Path(__file__).resolve().parents[2]
    settings = make_settings()
    ingest_paths(settings, [repo / "data" / "samples" / "docs"])
    questions = [
        json.loads(line)["question"]
        for line in (repo / "data" / "samples" / "qa.jsonl").read_text("utf-8").splitlines()
    ]
    store = open_store(settings)
    try:
        retriever = Retriever(settings, store)
        answerable.sentence_terms.cache_clear()
        cached = [retriever.retrieve(q, ["all"]).evidence for q in questions]
        assert answerable.sentence_terms.cache_info().hits > 0  # passages seen again
        fresh = []
        for q in questions:
            answerable.sentence_terms.cache_clear()
            fresh.append(retriever.retrieve(q, ["all"]).evidence)
    finally:
        store.close()
    assert cached == fresh and len(cached) == len(questions) >= 10
