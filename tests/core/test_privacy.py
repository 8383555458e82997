"""Personal numbers found and masked in Chinese and English sentences (core/privacy.py), policy
numbers left alone; the check digit against the standard's own examples, Luhn against the card
networks' test numbers."""

from __future__ import annotations

import pytest

from core.privacy import (
    id_check_digit,
    luhn_ok,
    mask_personal,
    mask_values,
    personal_numbers,
)

# GB 11643-1999's own examples of the resident ID number, with their check characters.
STANDARD_IDS = ["11010519491231002X", "440524188001010014"]
# The card networks' published test numbers (Visa, Mastercard, Amex) and a UnionPay-shaped one.
TEST_CARDS = ["4111111111111111", "5500000000000004", "378282246310005", "6222021234567890128"]


@pytest.mark.parametrize("number", STANDARD_IDS)
def test_the_check_digit_is_the_standards(number: str) -> None:
    assert id_check_digit(number[:17]) == number[17]


@pytest.mark.parametrize("number", TEST_CARDS)
def test_luhn_passes_the_networks_test_numbers(number: str) -> None:
    assert luhn_ok(number)
    last = int(number[-1])
    assert not luhn_ok(number[:-1] + str((last + 1) % 10))


# (sentence, the kind found, the number as written, the sentence masked)
FOUND = [
    # resident ID numbers
    ("我的身份证号是11010519491231002X，请帮我查一下社保。", "id", "11010519491231002X",
     "我的身份证号是**************002X，请帮我查一下社保。"),
    ("My ID number is 440524188001010014, can I claim travel?", "id", "440524188001010014",
     "My ID number is **************0014, can I claim travel?"),
    ("身份证：11010519491231002x。", "id", "11010519491231002x", "身份证：**************002x。"),
    ("老身份证 110105491231002 还能用吗？", "id", "110105491231002",
     "老身份证 ***********1002 还能用吗？"),
    ("Is my old ID card 110105491231002 valid?", "id", "110105491231002",
     "Is my old ID card ***********1002 valid?"),
    # mobile numbers
    ("请回电13812345678，谢谢", "mobile", "13812345678", "请回电*******5678，谢谢"),
    ("手机：138-1234-5678", "mobile", "138-1234-5678", "手机：***-****-5678"),
    ("Call me on +86 139 1234 5678 after 6pm.", "mobile", "139 1234 5678",
     "Call me on +86 *** **** 5678 after 6pm."),
    ("电话(+86)15912345678或邮件", "mobile", "15912345678", "电话(+86)*******5678或邮件"),
    # landlines, Chinese and international
    ("人事部电话010-62345678转分机", "phone", "010-62345678", "人事部电话***-****5678转分机"),
    ("请拨（0755）8888 1234咨询", "phone", "（0755）8888 1234", "请拨（****）**** 1234咨询"),
    ("Ring 021-6123-4567 ext. 801 for payroll.", "phone", "021-6123-4567",
     "Ring ***-****-4567 ext. 801 for payroll."),
    ("Our London office: +44 20 7946 0958.", "phone", "+44 20 7946 0958",
     "Our London office: +44 ** **** 0958."),
    ("海外电话 +1 415-555-2671 可以报销吗", "phone", "+1 415-555-2671",
     "海外电话 +1 ***-***-2671 可以报销吗"),
    ("Call (415) 555-2671 about my claim", "phone", "(415) 555-2671",
     "Call (***) ***-2671 about my claim"),
    # e-mail addresses
    ("发邮件到 zhang.san@example.com 可以吗？", "email", "zhang.san@example.com",
     "发邮件到 z***@example.com 可以吗？"),
    ("Mail li_si+hr@corp.example.cn please", "email", "li_si+hr@corp.example.cn",
     "Mail l***@corp.example.cn please"),
    ("我的QQ邮箱13812345678@qq.com", "email", "13812345678@qq.com", "我的QQ邮箱1***@qq.com"),
    # bank cards: plain, in groups of four, with dashes, Amex 4-6-5
    ("工资卡号6222021234567890128怎么改？", "card", "6222021234567890128",
     "工资卡号***************0128怎么改？"),
    ("Card 4111 1111 1111 1111 was charged twice", "card", "4111 1111 1111 1111",
     "Card **** **** **** 1111 was charged twice"),
    ("卡号：5500-0000-0000-0004", "card", "5500-0000-0000-0004", "卡号：****-****-****-0004"),
    ("My Amex 3782 822463 10005 expired", "card", "3782 822463 10005",
     "My Amex **** ****** *0005 expired"),
]


@pytest.mark.parametrize(("sentence", "kind", "number", "masked"), FOUND)
def test_each_kind_is_found_and_masked(sentence: str, kind: str, number: str,
                                       masked: str) -> None:
    assert personal_numbers(sentence) == [(kind, number)]
    assert mask_personal(sentence) == masked
    assert mask_personal(masked) == masked  # masking masked text changes nothing
    assert personal_numbers(masked) == []


# Policy numbers and near-misses: found nowhere, left as they are.
LEFT_ALONE = [
    "根据第十二条，年假最多结转5天。",
    "Under Article 12 and Section 3.2, leave carries over.",
    "每晚住宿标准800元，超出部分自理。",
    "The limit is ¥1,200.00 a night, or RMB 12,000 a year.",
    "加班费按3.5%计算，最高1,234,567.89元。",
    "自2024-01-01起施行，2024年1月1日生效，2024/01/01 至 2024.12.31。",
    "Effective 2024-01-01 through 31/12/2024; reviewed 20240101.",
    "参见 GB/T 35273-2020 与 ISO 27001:2022 的要求。",
    "制度编号 HR-2024-0012，版本 V3.2，文号 人发〔2023〕15号。",
    "Policy code HR-138-1234-5678 and form F-010-62345678 are internal.",
    "文件编号 12345678901 不是手机号。",  # 11 digits, but 12… is no mobile prefix
    "工号 20230001，部门代码 0101。",
    "保单号 P2024010112345 已生效。",
    "订单号 110105491231002 已发货。",  # 15 digits, no ID card named before it
    "编号 110105194912310021 的申请",  # 18 digits, wrong check digit (X is right)
    "Reference 4111111111111112 is not a card.",  # 16 digits, Luhn fails
    "流水号 6217 0012 3456 7890 已入账",  # grouped, Luhn fails
    "序列号 2024010112345678903 已登记",  # Luhn may pass, but 20… is no card network
    "Room 3.13812345678 is a version string, v3.13800000000 too.",
    "年假 5 天、病假 12 天、婚假 3 天。",
    "Call extension 8021 or 4321.",
    "支付宝账号请写在附件里（不要写在问题里）。",
]


@pytest.mark.parametrize("sentence", LEFT_ALONE)
def test_policy_numbers_and_near_misses_are_left_alone(sentence: str) -> None:
    assert personal_numbers(sentence) == []
    assert mask_personal(sentence) == sentence


def test_a_sentence_with_several_kinds() -> None:
    sentence = ("报销联系张三，电话13812345678或010-62345678，邮箱zhangsan@corp.cn，"
                "身份证11010519491231002X，卡号6222021234567890128，依据第十二条，上限800元。")
    kinds = sorted(kind for kind, _ in personal_numbers(sentence))
    assert kinds == ["card", "email", "id", "mobile", "phone"]
    masked = mask_personal(sentence)
    assert "13812345678" not in masked and "62345678" not in masked
    assert "zhangsan" not in masked and "19491231" not in masked and "021234567890" not in masked
    assert masked.endswith("依据第十二条，上限800元。")


def test_mask_values_masks_strings_only() -> None:
    value = {"note": "call 13812345678", "n": 13812345678, "list": ["a@b.cn", 1.5],
             "nested": {"card": "4111 1111 1111 1111"}}
    assert mask_values(value) == {"note": "call *******5678", "n": 13812345678,
                                  "list": ["a***@b.cn", 1.5],
                                  "nested": {"card": "**** **** **** 1111"}}


def test_empty_and_plain_text() -> None:
    assert mask_personal("") == ""
    assert mask_personal("年假可以结转吗？") == "年假可以结转吗？"
