"""What a document's dates mean on a given day (core/policy_dates.py): pure, on real dates."""

from __future__ import annotations

import datetime as dt

import pytest

from core.errors import IngestError, KbError
from core.policy_dates import (
    carry_admin_dates,
    date_note,
    due,
    has_taken_effect,
    out_of_force,
    parse_day,
    review_overdue,
    set_by_admin,
)
from core.types import DocMeta


def doc(path: str = "travel-2023.pdf", **dates: str) -> DocMeta:
    return DocMeta(path, path, "/docs", "", 0, 0.0, **dates)  # type: ignore[arg-type]


TRAVEL_2023 = doc(effective_date="2023-01-01", expires="2023-12-31")


@pytest.mark.parametrize(
    ("day", "expected"),
    [
        (dt.date(2022, 12, 31), "not in force until 2023-01-01"),
        (dt.date(2023, 1, 1), ""),  # the effective day is included
        (dt.date(2023, 12, 31), ""),  # so is the expiry day
        (dt.date(2024, 1, 1), "expired 2023-12-31"),
    ],
)
def test_in_force_from_effective_through_expires(day: dt.date, expected: str) -> None:
    assert out_of_force(TRAVEL_2023, day) == expected


def test_open_dates_leave_that_side_open() -> None:
    assert out_of_force(doc(), dt.date(1990, 1, 1)) == ""
    assert out_of_force(doc(expires="2030-01-01"), dt.date(1990, 1, 1)) == ""
    assert has_taken_effect(doc(), dt.date(1990, 1, 1))
    assert not has_taken_effect(doc(effective_date="2027-01-01"), dt.date(2026, 12, 31))
    assert has_taken_effect(TRAVEL_2023, dt.date(2025, 1, 1))  # expired, still taken effect


def test_an_effective_date_an_older_kb_kept_as_text_applies_no_date() -> None:
    """Before dates were checked, a sidecar's effective_date was any text (it ordered versions):
    a ledger holding one still answers, the document in force."""
    legacy = doc(effective_date="2023 edition")
    assert out_of_force(legacy, dt.date(2020, 1, 1)) == "" and has_taken_effect(
        legacy, dt.date(2020, 1, 1))
    assert date_note(doc(effective_date="2023"), dt.date(2020, 1, 1)) == ""


def test_review_is_overdue_the_day_after_review_by() -> None:
    meta = doc(review_by="2026-06-30")
    assert review_overdue(meta, dt.date(2026, 6, 30)) == ""
    assert review_overdue(meta, dt.date(2026, 7, 1)) == "2026-06-30"
    assert date_note(meta, dt.date(2026, 7, 1)) == "review was due by 2026-06-30"
    # out of force says more than an overdue review
    both = doc(review_by="2023-06-30", expires="2023-12-31")
    assert date_note(both, dt.date(2024, 1, 1)) == "expired 2023-12-31"


def test_due_lists_reviews_past_or_within_the_window_and_expiries_within_it() -> None:
    today = dt.date(2026, 12, 3)
    docs = [
        doc("overdue.pdf", review_by="2026-11-30"),
        doc("soon.pdf", review_by="2026-12-20"),
        doc("later.pdf", review_by="2027-03-01"),
        doc("expiring.pdf", expires="2026-12-08"),
        doc("expired.pdf", expires="2026-12-02", review_by="2026-01-01"),  # kb docs says why
        doc("future.pdf", effective_date="2027-01-01", review_by="2026-12-10"),
    ]
    found = due(docs, today, 30)
    assert [(d.meta.path, d.what, d.days_left) for d in found] == [
        ("overdue.pdf", "review", -3),
        ("expiring.pdf", "expires", 5),
        ("future.pdf", "review", 7),  # reviewed before it takes effect
        ("soon.pdf", "review", 17),
    ]
    assert [d.note for d in found] == [
        "review overdue by 3 days (due 2026-11-30)",
        "expires in 5 days (2026-12-08)",
        "review due in 7 days (2026-12-10)",
        "review due in 17 days (2026-12-20)",
    ]
    assert [d.meta.path for d in due(docs, today, 0)] == ["overdue.pdf"]
    assert "later.pdf" in [d.meta.path for d in due(docs, today, 100)]


def test_parse_day_takes_toml_dates_and_iso_strings_and_names_the_key() -> None:
    assert parse_day(dt.date(2024, 1, 1), "expires") == "2024-01-01"
    assert parse_day(" 2024-01-01 ", "expires") == "2024-01-01"
    assert parse_day("", "expires") == ""
    for bad in ("2024-1-1", "2024-02-30", "next year", 20240101, dt.datetime(2024, 1, 1, 9)):
        with pytest.raises(KbError, match=r"^x.meta.toml: expires: .* write it as YYYY-MM-DD"):
            parse_day(bad, "x.meta.toml: expires")
    with pytest.raises(IngestError):
        parse_day("soon", "x", IngestError)


def test_admin_dates_survive_a_new_description_unless_the_sidecar_sets_the_key() -> None:
    before = set_by_admin(doc(effective_date="2023-01-01"),
                          {"expires": "2023-12-31", "review_by": "2023-06-30"})
    assert before.admin_dates == ("expires", "review_by")
    described = doc(effective_date="2023-01-01", review_by="2023-09-30")  # the sidecar's
    after = carry_admin_dates(described, before)
    assert (after.effective_date, after.review_by, after.expires) == (
        "2023-01-01", "2023-09-30", "2023-12-31")
    assert after.admin_dates == ("expires",)  # the sidecar took review_by over
    cleared = carry_admin_dates(doc(), set_by_admin(after, {"expires": ""}))
    assert cleared.expires == "" and cleared.admin_dates == ("expires",)
    assert carry_admin_dates(described, None) == described
