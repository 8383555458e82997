"""When a document applies: its `effective`, `review_by` and `expires` dates (ISO days,
YYYY-MM-DD), and what they mean on a given day. Pure functions of a document and the day; the
day comes from a clock passed in (`Today`, `datetime.date.today` in a process), never read here.

A document is in force from `effective` through `expires`, both days included: the 2023 travel
policy with expires = 2023-12-31 applies on 2023-12-31 and no longer on 2024-01-01. An empty
date leaves that side open. Its review is overdue the day after `review_by`.

    parse_day("2024-01-01", "x.meta.toml: expires") -> "2024-01-01"
    out_of_force(DocMeta(..., expires="2023-12-31"), date(2024, 1, 1)) -> "expired 2023-12-31"
    review_overdue(DocMeta(..., review_by="2026-06-30"), date(2026, 7, 1)) -> "2026-06-30"
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from core.errors import KbError
from core.types import DocMeta

# A clock: today's date (the day a question is answered, a list is drawn).
Today = Callable[[], dt.date]
# How many days ahead `kb docs --due` and the admin tab look for reviews and expiries.
DUE_WITHIN_DAYS = 30
# The date keys as sidecars, `kb docs set` and the upload form name them -> DocMeta's fields.
DATE_FIELDS = {"effective": "effective_date", "review_by": "review_by", "expires": "expires"}


def parse_day(value: object, where: str, error: type[KbError] = KbError) -> str:
    """`value` (a TOML date or a string) as "YYYY-MM-DD"; "" stays "" (no date). `error`
    (naming `where`) for anything else.

    parse_day(datetime.date(2024, 1, 1), "expires") -> "2024-01-01"
    parse_day("2024-1-1", "expires") -> KbError("expires: '2024-1-1' is not a date; ...")
    """
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    text = value.strip() if isinstance(value, str) else None
    if text == "":
        return ""
    try:
        if text is not None and len(text) == 10:
            return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise error(f"{where}: {value!r} is not a date; write it as YYYY-MM-DD (2024-01-01)")


def _day(text: str) -> dt.date | None:
    """The date of a stored "YYYY-MM-DD"; None for "" and for text an older kb kept as an
    `effective_date` (it only ordered a series' versions: no date to apply).

    _day("2024-01-01") -> date(2024, 1, 1);  _day("2023") -> None
    """
    try:
        return dt.date.fromisoformat(text) if len(text) == 10 else None
    except ValueError:
        return None


def out_of_force(meta: DocMeta, today: dt.date) -> str:
    """Why the document does not apply `today` ("not in force until …", "expired …"), or ""
    when it does."""
    effective, expires = _day(meta.effective_date), _day(meta.expires)
    if effective is not None and today < effective:
        return f"not in force until {meta.effective_date}"
    if expires is not None and today > expires:
        return f"expired {meta.expires}"
    return ""


def has_taken_effect(meta: DocMeta, today: dt.date) -> bool:
    """Whether its effective date has come (or it has none). A version that has taken effect
    replaces the older ones of its series, also once it has expired itself: an expired newest
    version ends the series, it does not bring the one it replaced back."""
    effective = _day(meta.effective_date)
    return effective is None or effective <= today


def review_overdue(meta: DocMeta, today: dt.date) -> str:
    """Its `review_by` date when that has passed `today`, else ""."""
    review_by = _day(meta.review_by)
    return meta.review_by if review_by is not None and today > review_by else ""


def date_note(meta: DocMeta, today: dt.date) -> str:
    """What a listing says of its dates `today`: why it is out of force, else that its review
    is overdue, else "".

    date_note(DocMeta(..., review_by="2026-06-30"), date(2026, 12, 1))
        -> "review was due by 2026-06-30"
    """
    if why := out_of_force(meta, today):
        return why
    if due := review_overdue(meta, today):
        return f"review was due by {due}"
    return ""


@dataclass(frozen=True)
class Due:
    """A document that needs its owner: its review is due, or it is about to expire."""

    meta: DocMeta
    what: str  # "review" | "expires"
    day: str  # YYYY-MM-DD
    days_left: int  # negative: overdue by that many days

    @property
    def note(self) -> str:
        """due_note: "review overdue by 3 days (due 2026-11-30)", "expires in 5 days (…)"."""
        if self.what == "review":
            if self.days_left < 0:
                return f"review overdue by {-self.days_left} days (due {self.day})"
            return f"review due in {self.days_left} days ({self.day})"
        return f"expires in {self.days_left} days ({self.day})"


def due(metas: Iterable[DocMeta], today: dt.date, within: int) -> list[Due]:
    """The documents whose review is overdue or due within `within` days, and those that expire
    within `within` days, soonest first; an expired one needs no review (`date_note` lists it).

    due([DocMeta(..., expires="2026-12-08")], date(2026, 12, 3), 30)[0].note
        -> "expires in 5 days (2026-12-08)"
    """
    horizon = today + dt.timedelta(days=within)
    found: list[Due] = []
    for meta in metas:
        review_by, expires = _day(meta.review_by), _day(meta.expires)
        expired = expires is not None and expires < today
        if review_by is not None and review_by <= horizon and not expired:
            found.append(Due(meta, "review", meta.review_by, (review_by - today).days))
        if expires is not None and today <= expires <= horizon:
            found.append(Due(meta, "expires", meta.expires, (expires - today).days))
    return sorted(found, key=lambda d: (d.days_left, d.meta.path, d.what))


def _with_dates(meta: DocMeta, dates: Mapping[str, str], admin: set[str]) -> DocMeta:
    """`meta` with these dates (keys as DATE_FIELDS names them) and these keys an admin's."""
    return replace(
        meta,
        effective_date=dates.get("effective", meta.effective_date),
        review_by=dates.get("review_by", meta.review_by),
        expires=dates.get("expires", meta.expires),
        admin_dates=tuple(sorted(admin)),
    )


def set_by_admin(meta: DocMeta, dates: Mapping[str, str]) -> DocMeta:
    """`meta` with these dates (keys as DATE_FIELDS names them, "" clears one) set by an admin:
    they are kept through a re-ingest (`carry_admin_dates`).

    set_by_admin(meta, {"expires": "2024-12-31"}).admin_dates -> ("expires",)
    """
    return _with_dates(meta, dates, set(meta.admin_dates) | set(dates))


def carry_admin_dates(new: DocMeta, old: DocMeta | None) -> DocMeta:
    """A document described again from its file and sidecar (`new`), with the dates an admin
    set on its earlier record (`old`) where the sidecar sets no such key: a sidecar's key
    prevails, and replaces what an admin set.

    carry_admin_dates(meta_without_expires, old_with_admin_expires).expires -> old's expires
    """
    if old is None or not old.admin_dates:
        return new
    kept = {key: getattr(old, DATE_FIELDS[key]) for key in old.admin_dates
            if not getattr(new, DATE_FIELDS[key])}
    return _with_dates(new, kept, set(kept))
