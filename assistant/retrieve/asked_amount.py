"""What kind of answer a question asks for, and whether a passage states one.

A question that asks for an amount ("一个月最多能加多少小时？", "How many weeks of paid leave…")
is answered by a passage that states a number with that unit ("每周至少休息一日", "up to 12
weeks"). Retrieval uses this as one more ranking of the lexical candidates: of two passages
that share the question's words, the one stating such an amount comes first. A question that asks
for no amount gets no ranking.

Three kinds of amount are not a number with a unit: how often ("多久发一次", "how often" ->
"每年", "monthly": `frequency`, which replaces the durations 多久 would otherwise ask for), a
share ("按什么比例" -> "2%": `percent`), and how a sum is computed ("滞纳金怎么计算" -> "按日加收
万分之五", "经济补偿怎么算" -> "二倍": `rate`; for a period, "期限怎么算", the durations).

    expected_units("公司每周至少要让员工休息几天？") -> frozenset({"day"})
    asked_units("住房公积金贷款利率是多少？") -> frozenset({"percent"})
    states_amount("用人单位应当保证劳动者每周至少休息一日。", frozenset({"day"})) -> True
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Each unit's spellings: Chinese, then English (singular; a plural "s" is allowed). A question
# asks for one as 多少小时 / 几个月 / how many weeks; a passage states one as 三十六小时 / 1日 /
# 12 weeks.
UNITS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "hour": (("小时", "个小时", "钟头"), ("hour",)),
    "day": (("天", "日", "个工作日", "工作日"), ("day", "business day", "workday")),
    "week": (("周", "个星期", "星期", "礼拜"), ("week",)),
    "month": (("个月", "月"), ("month",)),
    "year": (("年",), ("year",)),
    "age": (("周岁", "岁"), ()),
    "money": (("元", "块钱"), ("dollar",)),
    "percent": ((), ("percent",)),  # 百分之N and N% below
    "times": (("倍",), ()),
}
FREQUENCY = "frequency"
RATE = "rate"
DURATION = frozenset({"hour", "day", "week", "month", "year"})

_CJK_DIGITS = "零〇一二两三四五六七八九十百千万"
# A number not read off a date ("5月1日" states no amount of days)...
_ZH_NUMERAL = rf"(?<![0-9年月])(?:[0-9][0-9,]*(?:\.[0-9]+)?|[{_CJK_DIGITS}半]+)"
# ...nor a year ("2024年", "二〇二四年"): a span of years has at most two digits and no 〇.
_ZH_YEARS = rf"(?<![0-9{_CJK_DIGITS}])(?:[0-9]{{1,2}}(?:\.[0-9]+)?|[一二两三四五六七八九十百半]+)"
_EN_NUMERAL = (
    r"(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"fifteen|twenty|thirty|forty|fifty|sixty|ninety|half|a|an)"
)


def _unit_pattern(spellings: tuple[str, ...], english: bool) -> str:
    ordered = sorted(spellings, key=len, reverse=True)
    if english:
        return "(?:" + "|".join(re.escape(s) + "s?" for s in ordered) + r")\b"
    return "(?:" + "|".join(re.escape(s) for s in ordered) + ")"


def _compile() -> tuple[dict[str, re.Pattern[str]], dict[str, re.Pattern[str]]]:
    """Per unit: the pattern of a question asking for it, and of a passage stating it."""
    asks: dict[str, list[str]] = {
        "percent": [r"百分之几|百分之多少|多少%|比例|百分比|\bwhat (?:percentage|percent|share)\b"]
    }
    states: dict[str, list[str]] = {
        "money": [r"\$\s?\d"],
        "percent": [rf"\d\s?%|百分之[{_CJK_DIGITS}]"],
        # 每年 / 每两个月 / monthly / once a year / every 6 months
        FREQUENCY: [
            rf"每[{_CJK_DIGITS}0-9]*个?(?:年|月|周|季度|季|天|日|星期)",
            r"\b(?:annually|monthly|weekly|quarterly|yearly|daily|biweekly)\b",
            r"\b(?:annual|monthly|weekly|quarterly|yearly|daily) basis\b",
            r"\b(?:every|each|per|once a|twice a|once per)\s(?:\w+\s)?"
            r"(?:year|month|week|day|quarter)s?\b",
        ],
        # 二倍 / 百分之一百五十 / 万分之五 / 20%
        RATE: [
            rf"\d\s?%|[百千万]分之[{_CJK_DIGITS}]|[0-9{_CJK_DIGITS}]+\s?倍",
            r"\bpercent\b|\btimes\b",
        ],
    }
    for unit, (zh, en) in UNITS.items():
        if zh:
            numeral = _ZH_YEARS if unit == "year" else _ZH_NUMERAL
            asks.setdefault(unit, []).append(rf"(?:多少|几)(?:个)?{_unit_pattern(zh, False)}")
            states.setdefault(unit, []).append(rf"{numeral}\s?{_unit_pattern(zh, False)}")
        if en:
            asks.setdefault(unit, []).append(
                rf"\bhow many (?:\w+ ){{0,2}}?{_unit_pattern(en, True)}"
            )
            states.setdefault(unit, []).append(rf"\b{_EN_NUMERAL}[\s-]{_unit_pattern(en, True)}")
    return (
        {unit: re.compile("|".join(p)) for unit, p in asks.items()},
        {unit: re.compile("|".join(p)) for unit, p in states.items()},
    )


_ASKS, _STATES = _compile()

# Questions that ask for a duration or a sum without naming the unit.
_ASKS_DURATION = re.compile(
    r"多久|多长时间|\bhow (?:soon|quickly)\b|\bhow long\b(?!.*\b(?:have to|must|should) be\b)"
)
_ASKS_MONEY = re.compile(r"多少钱|\bhow much (?:money|does \w+ cost)\b")
# "How much annual leave…", "By how much can I go over…": some amount, unit unsaid.
_ASKS_AMOUNT = re.compile(r"\bhow much\b")
_ASKS_AGE = re.compile(r"多大年[龄纪]|几岁|多少岁|\bhow old\b")
# A rate or a share ("缴费比例是多少") is stated as a percentage; an English "rate" may also be
# a sum ("the mileage rate": $0.62 a mile).
_RATE = re.compile(r"比例|费率|利率|比率|税率|\bratio\b|\bpercentage\b")
_RATE_EN = re.compile(r"\brates?\b")
_ASKS_WHAT = re.compile(r"多少|几|\bwhat\b|\bhow\b")
# How often: 多久…一次, 几个月一次, how often.
_ASKS_FREQUENCY = re.compile(
    r"(?:多久|多长时间|几个?(?:年|月|周|天|日|星期))[^，。？！,?!]{0,12}?一次"
    r"|\bhow (?:often|frequently)\b"
)
# How a sum (or a period) is computed: 怎么算, 如何计算, how is … calculated.
_ASKS_CALCULATION = re.compile(
    r"怎么算|怎么计算|如何计算|怎样计算|如何算|计算方法"
    r"|\bhow (?:is|are|do|does|will) [\w\s']{0,40}?(?:calculated|computed)\b"
)
# ...of a period, which is then stated as a duration (期限怎么算 -> 最长为十二个月).
_PERIOD = re.compile(r"期限|假|时间|年限|工龄|天数|\b(?:leave|period|deadline)\b")


def expected_units(question: str) -> frozenset[str]:
    """The units an answer to `question` would be stated in; empty when it asks no amount."""
    text = unicodedata.normalize("NFKC", question).lower()
    units = {unit for unit, pattern in _ASKS.items() if pattern.search(text)}
    if _ASKS_DURATION.search(text):
        units |= DURATION
    if _ASKS_MONEY.search(text):
        units.add("money")
    elif _ASKS_AMOUNT.search(text):
        units |= DURATION | {"money", "percent"}
    if _ASKS_AGE.search(text):
        units.add("age")
    if _ASKS_CALCULATION.search(text):
        units |= DURATION if _PERIOD.search(text) else {RATE}
    if _ASKS_FREQUENCY.search(text):
        units = (units - DURATION) | {FREQUENCY}
    return frozenset(units)


def asked_units(question: str) -> frozenset[str]:
    """`expected_units`, plus "percent" for a question asking what a rate or share is. For the
    answerability model only: retrieval's amount ranking keeps `expected_units`.

    asked_units("养老保险单位缴费比例是多少？") -> frozenset({"percent"})
    """
    units = expected_units(question)
    text = unicodedata.normalize("NFKC", question).lower()
    if _ASKS_WHAT.search(text):
        if _RATE.search(text):
            units |= {"percent"}
        if _RATE_EN.search(text):
            units |= {"percent", "money"}
    return units


def states_amount(text: str, units: frozenset[str]) -> bool:
    """Whether `text` states a number in one of `units`.

    states_amount("春节，放假4天（农历除夕、正月初一至初三）", frozenset({"day"})) -> True
    states_amount("2024年修订", frozenset({"year"})) -> False
    """
    return any(_states(text, unit) for unit in units)


@lru_cache(maxsize=8192)
def _states(text: str, unit: str) -> bool:
    """`states_amount` for one unit, kept per text: the same passages are candidates of many
    questions, and the amount ranking reads each of them."""
    return _STATES[unit].search(_normal(text)) is not None


@lru_cache(maxsize=2048)
def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()
