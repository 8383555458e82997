"""Which amount a question asks for, and which passages state one."""

from __future__ import annotations

import pytest

from assistant.retrieve.asked_amount import (
    DURATION,
    FREQUENCY,
    RATE,
    asked_units,
    expected_units,
    states_amount,
)


@pytest.mark.parametrize(
    ("question", "units"),
    [
        ("公司每周至少要让员工休息几天？", {"day"}),
        ("一个月最多能加多少小时？", {"hour"}),
        ("试用期最长几个月？", {"month"}),
        ("试用期最长多久？", DURATION),
        ("年终奖发多少钱？", {"money"}),
        ("How many weeks of paid leave do I get after adopting a child?", {"week"}),
        ("How many business days do I have to file?", {"day"}),
        ("How soon after I get back do I have to file my travel voucher?", DURATION),
        ("How much annual leave do I earn each pay period?", DURATION | {"money", "percent"}),
        ("How much money is the stipend?", {"money"}),
        # how often: a frequency, not the durations 多久 alone asks for
        ("工资最少多长时间发一次？", {FREQUENCY}),
        ("车间多久要做一次有害因素检测？", {FREQUENCY}),
        ("How often must system owners review user access?", {FREQUENCY}),
        # a share
        ("失业保险费单位和职工分别按什么比例缴纳？", {"percent"}),
        ("What percentage of my salary is paid?", {"percent"}),
        # how a sum is computed: a rate; how a period is: a duration
        ("单位欠缴社保费，滞纳金怎么计算？", {RATE}),
        ("How is the severance payment calculated?", {RATE}),
        ("失业金的领取期限怎么算？", DURATION),
    ],
)
def test_questions_that_ask_for_an_amount(question: str, units: set[str]) -> None:
    assert expected_units(question) == units


@pytest.mark.parametrize(
    "question",
    [
        "年假可以结转吗？",
        "哪些员工信息属于敏感个人信息？",
        "How long does my work phone passcode have to be?",
        "Who do I email to report a security incident?",
    ],
)
def test_questions_that_ask_for_no_amount(question: str) -> None:
    assert expected_units(question) == frozenset()


@pytest.mark.parametrize(
    ("question", "units"),
    [
        ("基本养老保险单位缴费比例是多少？", {"percent"}),
        ("现在住房公积金贷款利率是多少？", {"percent"}),
        ("What is the mileage reimbursement rate?", {"percent", "money"}),
        ("婚假有几天？", {"day"}),  # as expected_units
        ("Who sets the rate?", set()),  # names a rate, asks for none
        ("年假可以结转吗？", set()),
    ],
)
def test_the_answerability_model_also_hears_rates_asked_for(question: str, units: set[str]) -> None:
    assert asked_units(question) == units
    assert expected_units("现在住房公积金贷款利率是多少？") == frozenset()  # ranking unchanged


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("用人单位应当保证劳动者每周至少休息一日。", "day"),
        ("春节，放假 4 天（农历除夕、正月初一至初三）", "day"),
        ("每月不得超过三十六小时", "hour"),
        ("试用期不得超过六个月", "month"),
        ("You are entitled to 12 weeks of paid time off", "week"),
        ("notify GSA IT within 1 hour of suspected incident", "hour"),
        ("up to a 10-day extension", "day"),
        ("The first day of travel is reimbursed at $59", "money"),
        ("体检标准为每人 1500 元", "money"),
        ("工作满十年的，年休假十五天", "year"),
        ("支付不低于工资的百分之一百五十的工资报酬", "percent"),
        ("工资至少每月支付一次", FREQUENCY),
        ("至少每一个月进行一次检测", FREQUENCY),
        ("Access is reviewed quarterly", FREQUENCY),
        ("Owners review access once a year", FREQUENCY),
        ("Owners should perform access reviews on an annual basis", FREQUENCY),
        ("按日加收万分之五的滞纳金", RATE),
        ("按经济补偿标准的二倍向劳动者支付赔偿金", RATE),
    ],
)
def test_passages_that_state_an_amount(text: str, unit: str) -> None:
    assert states_amount(text, frozenset({unit}))


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("全国年节及纪念日放假办法（2024年修订）", "year"),  # a date, not a duration
        ("1988年7月21日国务院发布", "day"),
        ("二〇二四年十一月十日起施行", "year"),
        ("劳动节，放假2天（5月1日、2日）", "hour"),  # days, not hours
        ("第三十八条用人单位应当保证劳动者每周休息", "week"),  # no number
        ("Annual leave accrues every pay period", "day"),
        ("Annual leave accrues every pay period", FREQUENCY),  # no calendar unit
        ("社会保险经办机构应当自收到申请之日起10个工作日内办理完毕", FREQUENCY),
        ("按照国家规定的比例缴纳", RATE),  # no number
    ],
)
def test_passages_that_state_no_such_amount(text: str, unit: str) -> None:
    assert not states_amount(text, frozenset({unit}))
