"""The periods a query names ("in March 2026", "on May 3, 2023", "2025-11",
"last June"? no: only what is written), for ranking dated daily logs.

A period is ``(year, month)``, either part None for "any": "2024" is
``(2024, None)``, "June" ``(None, 6)``, "March 2026", "3 March 2026" and
"2026-03-04" are ``(2026, 3)``. A named day counts as its month: what happened on
a day is usually written down that day or in the days after it. Relative dates
("last week", "yesterday") are not resolved: nothing says what they are relative
to.

Month names are also words and names ("we may", "the march", "ask June"): a
month name with no day or year next to it counts only after a word that
introduces a time ("in May", "since June", "early March", "last August").
"""

from __future__ import annotations

import re
from datetime import date

__all__ = ["Period", "in_period", "period_text", "query_periods"]

Period = tuple[int | None, int | None]  # (year, month); None: any

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
_TIME_WORDS = frozenset(
    ("in", "on", "during", "since", "until", "till", "by", "before", "after", "from", "of")
    + ("early", "late", "mid", "last", "next", "this", "that", "through", "to")
)
_LONGEST_TIME_WORD = max(map(len, _TIME_WORDS))
_YEAR = r"(?:19|20)\d\d"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO = re.compile(rf"\b({_YEAR})-(0[1-9]|1[0-2])(?:-\d\d)?\b")
_NAMED = re.compile(
    rf"(?:\b({_DAY})\s+(?:of\s+)?)?\b({_NAME})\b\.?(?:\s+({_DAY})\b)?(?:,?\s+({_YEAR})\b)?",
    re.IGNORECASE,
)
_BARE_YEAR = re.compile(rf"(?<![\w.:/-])({_YEAR})(?![\w]|[.:/-]\d)")


def query_periods(text: str) -> tuple[Period, ...]:
    """The periods ``text`` names, in order, without repeats."""
    found: list[Period] = []
    taken = bytearray(len(text))  # 1: the character was read as part of a date
    for m in _ISO.finditer(text):
        found.append((int(m.group(1)), int(m.group(2))))
        taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    for m in _NAMED.finditer(text):
        if any(taken[m.start() : m.end()]):
            continue
        day_before, name, day_after, year = m.groups()
        if not (day_before or day_after or year) and not _after_time_word(text, m.start(2)):
            continue
        found.append((int(year) if year else None, _MONTHS[name.lower()]))
        taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    for m in _BARE_YEAR.finditer(text):
        if not any(taken[m.start() : m.end()]):
            found.append((int(m.group(1)), None))
    return tuple(dict.fromkeys(found))


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


def in_period(day: date, periods: tuple[Period, ...]) -> bool:
    """Whether ``day`` falls in any of ``periods``."""
    return any(
        (year is None or year == day.year) and (month is None or month == day.month)
        for year, month in periods
    )


def period_text(p: Period) -> str:
    """How ``explain`` shows a period: (2026, 3) -> "2026-03", (None, 6) -> "*-06",
    (2025, None) -> "2025"."""
    year, month = p
    return ("*" if year is None else str(year)) + ("" if month is None else f"-{month:02d}")
