"""The table ``when.read_time`` reads time expressions with: a pattern per row and
what it resolves to, a window of days as (first, last), against the question's
date. English; another language adds rows.

Month names are also words and names ("we may", "the march", "ask June"): a month
name with no day or year next to it counts only after a word that introduces a time
("in May", "since June", "early March", "last August"). A date without a year is
the latest one not after the question's date ("in December" asked in November: last
December).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

__all__ = ["FUTURE", "MONTH_NAMES", "RECENT_DAYS", "TABLE", "WEEKDAYS", "Rule", "Span"]

RECENT_DAYS = 14  # "recently", "lately": the last two weeks, and a half-life beyond

_MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
# Before a month name with no day or year: it is a month ("in May"), not a word.
# Not "this", "that", "to", "by": "this may be the cause", "I plan to march".
_TIME_WORDS = frozenset(
    ("in", "on", "during", "since", "until", "till", "before", "after", "from", "early")
    + ("late", "mid", "last", "next", "through", "of")
)
# Month names that are common words: with a bare day ("step 3 may fail") they are a
# date only written as a name ("3 May") or with an ordinal, "of" or a year.
_WORD_MONTHS = frozenset(("may", "march"))
_LONGEST_TIME_WORD = max(map(len, _TIME_WORDS))


def _after_time_word(text: str, at: int) -> bool:
    """Whether the word before ``text[at]`` (past spaces and hyphens: "mid-July") is
    one of ``_TIME_WORDS``. Walks back from ``at``: a query of 10,000 characters
    naming many months costs no more than reading it."""
    end = at
    while end > 0 and (text[end - 1].isspace() or text[end - 1] == "-"):
        end -= 1
    start = end
    while start > 0 and end - start <= _LONGEST_TIME_WORD and text[start - 1].isalnum():
        start -= 1
    if start > 0 and text[start - 1].isalnum():
        return False  # a longer word than any time word
    return text[start:end].lower() in _TIME_WORDS


_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "couple": 2, "a couple of": 2, "few": 3, "a few": 3,
}  # fmt: skip
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAYS = frozenset(_WEEKDAYS)
MONTH_NAMES = frozenset(_MONTHS)
_N = r"(\d{1,3}|a couple of|a few|couple|few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"  # noqa: E501
_UNIT = r"(day|week|month|year)s?"
_YEAR = r"((?:19|20)\d\d)"
_DAY = r"([12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))


def _n(word: str) -> int:
    w = word.lower()
    return int(w) if w.isdigit() else _NUMBERS[w]


def _week(day: date) -> tuple[date, date]:
    """The Monday-to-Sunday week holding ``day``."""
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6)


def _month(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return first, nxt - timedelta(days=1)


def _months_back(today: date, n: int) -> tuple[int, int]:
    k = today.year * 12 + today.month - 1 - n
    return k // 12, k % 12 + 1


def _latest(today: date, month: int, day: int | None) -> date | None:
    """The latest date in ``month`` (on ``day``) not after ``today`` (February 29th
    looks back as far as the last leap year)."""
    for year in range(today.year, today.year - 8, -1):
        try:
            d = date(year, month, day or 1)
        except ValueError:
            continue
        if d <= today:
            return d
    return None


Span = tuple[date, date] | None
Resolver = Callable[[re.Match[str], date], Span]


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    resolve: Resolver
    keep: bool = False  # the words are searched too ("2020" is also a port, a model)
    needs_day: bool = False  # a month name alone is the next rule's
    soft: bool = False  # "recently": a preference for the newer (``when.Window``)


def _ago(m: re.Match[str], today: date) -> Span:
    n, unit = _n(m.group(1)), m.group(2).lower()
    if n > 400:
        return None
    if unit == "day":
        d = today - timedelta(days=n)
        return (d, d) if n <= 2 else (d - timedelta(days=1), d + timedelta(days=1))
    if unit == "week":
        return _week(today - timedelta(days=7 * n))
    if unit == "month":
        return _month(*_months_back(today, n))
    return date(today.year - n, 1, 1), date(today.year - n, 12, 31)


def _past(m: re.Match[str], today: date) -> Span:
    """ "the last 3 days", "past two weeks": up to today."""
    n, unit = _n(m.group(1)), m.group(2).lower()
    days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
    if days > 365 * 30:
        return None
    return today - timedelta(days=days), today


def _last_unit(m: re.Match[str], today: date) -> Span:
    """ "last week" (the calendar week before this one), "past week" (7 days)."""
    which, unit = m.group(1).lower(), m.group(2).lower()
    if which in ("past", "previous few"):
        days = {"week": 7, "month": 30, "year": 365}[unit]
        return today - timedelta(days=days), today
    if unit == "week":
        return _week(today - timedelta(days=7))
    if unit == "month":
        return _month(*_months_back(today, 1))
    return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)


def _this_unit(m: re.Match[str], today: date) -> Span:
    unit = m.group(1).lower()
    if unit == "week":
        return _week(today)[0], today
    if unit == "month":
        return today.replace(day=1), today
    return today.replace(month=1, day=1), today


def _weekend(m: re.Match[str], today: date) -> Span:
    """The latest Saturday-Sunday that has begun ("last weekend" on a Sunday: the one
    before)."""
    which = (m.group(1) or "").lower().split()
    if which == ["this"] and today.weekday() < 5:  # asked on a weekday: the coming one
        coming = today + timedelta(days=5 - today.weekday())
        return coming, coming + timedelta(days=1)
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)
    if which[:1] == ["last"] and today.weekday() >= 5:
        saturday -= timedelta(days=7)
    return saturday, saturday + timedelta(days=1)


# A question about the past ("what did I do on Monday"), not a request ("ping me on
# Saturday"): a weekday with no "last" counts only in one.
# A past-tense verb in -ed, lower case (not "Alfred"), and not one that plans ahead.
_PAST = re.compile(
    r"\b(?:did|was|were|had|happened|went|said|told|came|got|made|bought|ago)\b"
    r"|\b(?!(?:planned|scheduled|booked|expected|supposed|intended|arranged|slated)\b)"
    r"(?-i:[a-z]{2,}[^e\W]ed)\b",
    re.IGNORECASE | re.ASCII,
)


@functools.lru_cache(maxsize=16)
def _is_past(text: str) -> bool:
    """Whether ``text`` asks about the past (once per query, not per weekday)."""
    return _PAST.search(text) is not None


def _weekday(m: re.Match[str], today: date) -> Span:
    """ "last Monday": the Monday before today; "the Monday before last": the one
    before that; "Monday", "on Monday" (in a question about the past): the latest
    Monday, today included."""
    last = bool(m.group(1))
    before_last = bool(m.group(3))
    if not (last or before_last) and not _is_past(m.string):
        return None
    wd = _WEEKDAYS.index(m.group(2).lower())
    back = (today.weekday() - wd) % 7
    if (last or before_last) and back == 0:
        back = 7
    if before_last:
        back += 7
    d = today - timedelta(days=back)
    return d, d


def _week_before_last(m: re.Match[str], today: date) -> Span:
    return _week(today - timedelta(days=14))


def _iso_day(m: re.Match[str], today: date) -> Span:
    try:
        d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None
    return d, d


def _iso_month(m: re.Match[str], today: date) -> Span:
    return _month(int(m.group(1)), int(m.group(2)))


def _named_day(m: re.Match[str], today: date) -> Span:
    """ "Oct 31st", "October 31, 2026", "31 October", "the 31st of October"."""
    day = int(m.group(1) or m.group(3))
    name = m.group(2)
    month = _MONTHS[name.lower().rstrip(".")]
    year = m.group(4)
    if name.lower() in _WORD_MONTHS and not year and not name[0].isupper():
        plain = re.fullmatch(r"\d+\s+\w+|\w+\s+\d+", m.group(0).strip())
        if plain:  # "step 3 may fail", "march 5 times": words
            return None
    if year:
        try:
            d = date(int(year), month, day)
        except ValueError:
            return None
    else:
        found = _latest(today, month, day)
        if found is None:
            return None
        d = found
    return d, d


def _named_month(m: re.Match[str], today: date) -> Span:
    """ "March 2026", or "in March" (the latest March): only after a time word when
    it has no year ("the march was long" is no date)."""
    month, year = _MONTHS[m.group(1).lower()], m.group(2)
    if year:
        return _month(int(year), month)
    if not _after_time_word(m.string, m.start(1)):
        return None
    latest = _latest(today, month, None)
    return None if latest is None else _month(latest.year, month)


def _year(m: re.Match[str], today: date) -> Span:
    y = int(m.group(1))
    return date(y, 1, 1), date(y, 12, 31)


def _fixed(back_first: int, back_last: int) -> Callable[[re.Match[str], date], Span]:
    return lambda m, today: (today - timedelta(days=back_first), today - timedelta(days=back_last))


_RECENT = _fixed(RECENT_DAYS, 0)  # "recently": a soft window (``when.Window.weight``)


def _rules() -> list[Rule]:
    wd = "|".join(_WEEKDAYS)
    table: list[tuple[str, Resolver]] = [
        (r"\b(?:the\s+)?day\s+before\s+yesterday\b", _fixed(2, 2)),
        (r"\byesterday(?:'s)?(?:\s+(?:morning|afternoon|evening|night))?\b", _fixed(1, 1)),
        (r"\blast\s+night(?:'s)?\b", _fixed(1, 0)),
        (r"\b(?:earlier\s+)?today(?:'s)?\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b",
         _fixed(0, 0)),
        (r"\b(?:just\s+now|a\s+moment\s+ago|a\s+minute\s+ago|an\s+hour\s+ago)\b", _fixed(0, 0)),
        (rf"(?<![\w.-]){_N}\s+{_UNIT}\s+ago\b", _ago),  # not "-3 days ago"
        (rf"\b(?:in\s+|over\s+|during\s+|for\s+)?the\s+(?:last|past|previous)\s+{_N}\s+{_UNIT}\b",
         _past),
        (rf"\b(?:the\s+)?(?:last|past|previous)\s+{_N}\s+{_UNIT}\b", _past),
        (r"\b(?:(?:earlier|later)\s+)?this\s+(week|month|year)\b", _this_unit),
        (r"\b(?:the\s+)?(last|past|previous)\s+(week|month|year)\b", _last_unit),
        (r"\b(last\s+|this\s+past\s+|over\s+the\s+|this\s+|the\s+)?weekend\b", _weekend),
        (r"\b(?:the\s+)?week\s+before\s+last\b", _week_before_last),
        (rf"\b(last\s+|this\s+past\s+)?(?:on\s+)?(?:the\s+)?({wd})(?:'s)?"
         rf"(\s+before\s+last)?\b", _weekday),
        (r"\b(?:recently|lately|these\s+days|the\s+other\s+day)\b", _RECENT),
        (r"(?<![\w.:/-])((?:19|20)\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
         r"(?![\w-]|[.:/]\w)", _iso_day),
        (r"(?<![\w.:/-])((?:19|20)\d\d)-(0[1-9]|1[0-2])(?![\w-]|[.:/]\w)", _iso_month),
        (rf"(?:\b(?:the\s+)?{_DAY}\s+(?:of\s+)?)?\b({_MONTH})\b\.?(?:\s+{_DAY}\b)?"
         rf"(?:,?\s+{_YEAR}\b)?", _named_day),
        (rf"\b({_MONTH})\b\.?(?:,?\s+{_YEAR}\b)?", _named_month),
        (rf"(?<![\w.:/-]){_YEAR}(?![\w]|[.:/-]\d)", _year),
    ]  # fmt: skip
    return [
        Rule(
            re.compile(p, re.IGNORECASE | re.ASCII),
            fn,
            keep=fn is _year,
            needs_day=fn is _named_day,
            soft=fn is _RECENT,
        )
        for p, fn in table
    ]


TABLE = _rules()
# "next Monday", "the coming week": the future is not in memory; left as words
FUTURE = re.compile(r"\b(?:next|coming|upcoming|following)\s+$", re.IGNORECASE | re.ASCII)
