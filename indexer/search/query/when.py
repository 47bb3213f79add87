"""When a query asks about: its time words resolved into windows of days.

"What did I do yesterday?", "what did we decide about the database last week",
"in October", "Oct 31st", "2026-10-31", "3 days ago", "last Monday", "this
morning", "recently": each expression is read against the request's ``asOf`` (its
date in the configured time zone, ``query.timeZone``) into a window of days, first
to last, and taken out of the words that are searched. Every chunk that has a date
(a daily log: its file name; a transcript: its newest message's time) can then be
found in or out of the window (``search.run``: a query that is only time lists the
window newest first; with other words, what is inside ranks first).

The expressions are a table (``when_rules``): a pattern and what it resolves to;
another language adds rows. Read in order, each expression once: "last week" is not
also "week". What is not in the table is searched as words, as before; so is a date
after the question's ("next week", "in December 2026" asked in November): memory
holds what was written before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo

from indexer.config.sections import time_zone
from indexer.search.query.when_rules import FUTURE, RECENT_DAYS, TABLE

__all__ = [
    "TIME_FILLER",
    "TimeQuery",
    "Window",
    "asked",
    "day_of",
    "midnight",
    "read_time",
    "today_of",
]

# Words of a question about a time that name no topic ("what happened last week",
# "what did I work on yesterday"): with only these and stop words left, the query
# lists the time instead of searching these words in it.
TIME_FILLER = frozenset(
    ("happen", "happened", "happening", "do", "did", "done", "doing", "say", "said", "tell")
    + ("told", "talk", "talked", "discuss", "discussed", "mention", "mentioned", "anything")
    + ("something", "everything", "work", "worked", "working", "go", "going", "went", "get")
    + ("got", "make", "made", "remember", "write", "wrote", "written", "note", "notes")
    + ("log", "logged", "memory", "memories", "up", "new", "day", "plan", "planned", "us")
)


@dataclass(frozen=True)
class Window:
    """Days ``first`` to ``last``, both included, read from ``said``."""

    first: date
    last: date
    said: str
    soft: bool = False  # "recently": a preference for the newer, not an edge

    def holds(self, day: date) -> bool:
        return self.first <= day <= self.last

    def weight(self, day: date) -> float:
        """How much of the boost a chunk of ``day`` gets: 1 inside a window, 0
        outside; for a soft window ("recently") half for every ``RECENT_DAYS`` it is
        older than the window's last day, none after it."""
        if not self.soft:
            return 1.0 if self.holds(day) else 0.0
        age = (self.last - day).days
        return 0.0 if age < 0 else 0.5 ** (age / RECENT_DAYS)

    def label(self) -> str:
        if self.first == self.last:
            return self.first.isoformat()
        return f"{self.first.isoformat()}..{self.last.isoformat()}"


@dataclass(frozen=True)
class TimeQuery:
    """A query's windows, and the query with the words they were read from taken
    out (``rest``: what is searched)."""

    windows: tuple[Window, ...] = ()
    rest: str = ""
    # Where each window was read: (start, end, window) in ``text``, for ``keeping``.
    read: tuple[tuple[int, int, Window], ...] = ()
    text: str = ""

    def holds(self, day: date | None) -> bool:
        return day is not None and any(w.holds(day) for w in self.windows)

    def weight(self, day: date | None) -> float:
        """The share of the date boost a chunk of ``day`` gets (``Window.weight``)."""
        if day is None:
            return 0.0
        return max((w.weight(day) for w in self.windows), default=0.0)

    def keeping(self, windows: tuple[Window, ...]) -> TimeQuery:
        """This query with only ``windows``: the words of the others searched again
        ("moved here 4 years ago" when memory holds no day of that year)."""
        if windows == self.windows:
            return self
        read = tuple(r for r in self.read if r[2] in windows)
        return TimeQuery(windows, _without(self.text, read), read, self.text)

    def days(self) -> int:
        """How many days the windows hold (overlaps counted twice)."""
        return sum((w.last - w.first).days + 1 for w in self.windows)


def today_of(as_of: datetime | None, zone: str | None) -> tuple[date, tzinfo]:
    """The date a question asked at ``as_of`` (None: now) is asked on, and the zone
    days are counted in: ``zone`` if named, else ``as_of``'s own offset, else the
    host's. A time with no zone is a time in that zone."""
    if zone:
        tz = time_zone(zone)
    elif as_of is not None and as_of.tzinfo is not None:
        tz = as_of.tzinfo
    else:
        tz = time_zone("")
    now = as_of if as_of is not None else datetime.now(UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=tz)
    return now.astimezone(tz).date(), tz


def day_of(at: float, tz: tzinfo) -> date | None:
    """The day (in ``tz``) of the epoch time ``at``."""
    try:
        return datetime.fromtimestamp(at, tz).date()
    except (OverflowError, OSError, ValueError):
        return None


def midnight(day: date, tz: tzinfo) -> float:
    """The epoch time ``day`` begins in ``tz``."""
    return datetime(day.year, day.month, day.day, tzinfo=tz).timestamp()


def read_time(text: str, today: date) -> TimeQuery:
    """The windows ``text`` names, resolved against ``today`` (the request's date),
    and ``text`` without the words they were read from."""
    taken = bytearray(len(text))  # 1: read as time; 2: read as time, searched too
    found: list[tuple[int, int, Window]] = []
    for rule in TABLE:
        for m in rule.pattern.finditer(text):
            if any(taken[m.start() : m.end()]):
                continue
            if rule.needs_day and not (m.group(1) or m.group(3)):
                continue  # a month name alone: the next rule reads it
            if FUTURE.search(text, max(0, m.start() - 12), m.start()):
                continue
            try:
                span = rule.resolve(m, today)
            except (ValueError, OverflowError):  # past the calendar ("400 years ago")
                span = None
            if span is None:
                continue
            if span[0] > today:  # "in December 2026" asked in November: searched as
                taken[m.start() : m.end()] = b"\x02" * (m.end() - m.start())  # words
                continue
            first, last = span[0], min(span[1], today)
            said = " ".join(m.group(0).split())
            w = Window(first, last, said, soft=rule.soft)
            found.append((m.start(), m.end(), w))
            if not rule.keep:
                taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
            else:
                taken[m.start() : m.end()] = b"\x02" * (m.end() - m.start())
    if not found:
        return TimeQuery((), text)
    found.sort(key=lambda x: x[0])
    windows = tuple(dict.fromkeys(w for _, _, w in found))
    read = tuple(r for r in found if taken[r[0]] == 1)  # a kept year is never taken out
    return TimeQuery(windows, _without(text, read), read, text)


def _without(text: str, read: tuple[tuple[int, int, Window], ...]) -> str:
    """``text`` with the spans the windows were ``read`` from taken out."""
    marks = bytearray(len(text))
    for start, end, _ in read:
        marks[start:end] = b"\x01" * (end - start)
    return " ".join("".join(" " if marks[i] else c for i, c in enumerate(text)).split())


def asked(
    text: str, as_of: datetime | None, zone: str | None, *, read: bool
) -> tuple[date, tzinfo, TimeQuery]:
    """A question's day and zone (``today_of``) and, when ``read``, the windows it
    names (``read_time``; else none)."""
    today, tz = today_of(as_of, zone)
    return today, tz, read_time(text, today) if read else TimeQuery()
