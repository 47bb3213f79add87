"""``supersession``: of two notes that state the same fact with different values,
the newer comes first (LongMemEval calls it knowledge update).

A statement is the line a hit's snippet is centred on, read as its *subject* (its
content words: not stop words, not words of change, not values) and its *values*
by kind: times (09:30, 5pm), dates (Monday, 4 December, 2026-11-03, 12-22), money
(€420), percentages, codes (FERRY-1111), numbers (300 flyers, 509-555-0148), and
names (a capitalised word inside the line).

Two statements state the same fact, the newer with another value, when:

* both are about what the question asks (its words, less those that ask for a
  value, ``ASKING_FOR``: "time", "which day", "how many", "did we pick"): the older
  holds half of them at least; the newer holds every one the older holds but one at
  most, and two of them at least or all the question's ("garden" shared with a note
  about the garden's looks is no subject of "who waters the garden?", nor "Marcus"
  of "Am I going to Marcus's Halloween party?"); and
* for a kind of value both hold, they hold different ones ("standup at 09:30" /
  "standup moved to 10:15"; "200 flyers by Friday" / "300 flyers, due Monday now"),
  or, sharing two subject words, each holds a name the other does not (the new
  vet's); or else, sharing one word of the question, the newer announces a change
  and names the older's value beside a new one ("a new number, 509-555-0193; the old
  509-555-0148 stops working").

Which is newer: a curated entry (MEMORY.md, USER.md) has no date, so a dated note
(a daily log by its file name, a transcript chunk by its messages) is newer than it
only when it announces a change (a word of ``ANNOUNCED``: "moved", "now", "new",
"switched", "from now on", ...). Between two dated notes, the later day, when the
newer restates the older (most of the shorter line's words shared, the rest values,
stop words and words of change: ``_restates``) or announces a change naming the
older's value; two events on two days that share a subject are not one fact.

For each of the first ``HEAD`` results, in order, the newest statement of its fact
among the first ``depth`` hits (of those holding a value of the kind the question
asks for, "which day", "how much", when there are any) moves just above it, taking
its score; the older names it (``supersededBy``), it names the older
(``supersedes``). Nothing else moves: an old note that alone answers keeps its
place, and a note that mentions the subject without another value changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate
from indexer.search.query.parse import STOP_WORDS, stem_prefix
from indexer.search.query.when_rules import MONTH_NAMES, WEEKDAYS
from indexer.search.snippets import has_word_with_prefix
from indexer.search.stages.base import Stage, rescored
from indexer.search.stages.dedup import citation
from indexer.search.time_scope import hit_day
from indexer.sources.curated import is_curated_root

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext, View

__all__ = [
    "ANNOUNCED",
    "ASKING_FOR",
    "HEAD",
    "Statement",
    "Supersession",
    "newer_value",
    "statement",
    "values_in_order",
]

# The first results whose facts are checked (OpenClaw's default maxResults; a fixed
# number, so the first results are the same whatever maxResults is asked).
HEAD = 6

# Question words that ask for a value, not about a subject ("what time", "how many").
ASKING_FOR = frozenset(
    ("time", "times", "day", "days", "date", "dates", "many", "much", "often", "long", "far")
    + ("cost", "costs", "price", "number", "amount", "when", "where", "which", "what", "who")
    + ("whom", "whose", "now", "currently", "current", "still", "these", "latest", "new")
    # and the words that ask for a decision ("which offer did we pick")
    + ("pick", "picked", "choose", "chose", "decide", "decided", "settle", "settled")
    + ("agree", "agreed", "end", "ended", "opt", "opted", "went", "going", "go")
)

# The kind of value a question word asks for: of the newer statements, one holding
# a value of that kind is preferred ("which day": the note naming the new day, not
# a later one that only says the time).
ASKED_KIND = {
    "day": "date", "days": "date", "date": "date", "when": "date", "time": "time",
    "times": "time", "much": "money", "cost": "money", "costs": "money", "price": "money",
    "many": "number", "number": "number", "amount": "number",
}  # fmt: skip

# Words with which a note announces that something changed.
ANNOUNCED = frozenset(
    ("new", "newly", "now", "switched", "changed", "moved", "instead", "anymore", "longer")
    + ("replaced", "updated", "switch", "switching", "moves", "moving", "rescheduled")
    + ("renegotiated", "raised", "increased", "reduced", "lowered", "postponed", "pushed")
    + ("delayed", "cancelled", "canceled", "revised", "corrected", "correction", "actually")
    + ("decided", "agreed", "settled", "changes", "change", "bumped", "dropped", "upped")
)
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?")
_CURRENCY = "€$£¥₹"
_VALUE = re.compile(
    r"(?P<time>\b\d{1,2}[:h.]\d{2}\s*(?:am|pm)?\b|\b\d{1,2}\s*(?:am|pm)\b|\bnoon\b|\bmidnight\b)"
    r"|(?P<iso>\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b"
    r"|\b(?:0?[1-9]|1[0-2])-(?:0?[1-9]|[12]\d|3[01])\b(?!-))"
    rf"|(?P<money>[{_CURRENCY}]\s?\d[\d,.]*\s?k?\b|\b\d[\d,.]*\s?k?\s?(?:[{_CURRENCY}]|eur\b|euros?\b"
    r"|usd\b|dollars?\b|pounds?\b|nzd\b|aud\b|kr\b|sek\b|chf\b))"
    r"|(?P<percent>\b\d+(?:[.,]\d+)?\s?%)"
    r"|(?P<code>\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b)"
    r"|(?P<digits>\b\d{2,}(?:[-.]\d{2,})+\b)"
    r"|(?P<number>\b\d+(?:[.,]\d+)?(?:st|nd|rd|th)?\b)",
    re.I,
)
_DAYS = {d: d for d in WEEKDAYS} | {d + "s": d for d in WEEKDAYS}
_MONTHS = frozenset(MONTH_NAMES)


@dataclass(frozen=True)
class Statement:
    """A line as a statement of a fact: its subject words (stemmed), its values by
    kind, whether it announces a change, and its content words' count."""

    subject: frozenset[str]
    values: dict[str, frozenset[str]]
    announces: bool
    names: frozenset[str]


# A statement of a fact is a sentence or two: a line is read up to this long (an
# agent-written line of 7 MB took seconds of every search that held it)
MAX_STATEMENT_CHARS = 2000


def _values(line: str) -> Iterator[tuple[re.Match[str], str, str]]:
    for m in _VALUE.finditer(line):
        kind = m.lastgroup or "number"
        kind = {"iso": "date", "digits": "number"}.get(kind, kind)
        if kind == "number" and m.group(0).lower().endswith(("st", "nd", "rd", "th")):
            kind = "date"
        yield m, kind, re.sub(r"\s+", "", m.group(0).lower())


def values_in_order(line: str) -> list[tuple[str, str]]:
    """(kind, value) of each value in ``line`` as it comes ("moved from 09:30 to
    10:15": the new value is the last of its kind); weekdays and months not
    included."""
    return [(kind, value) for _m, kind, value in _values(line[:MAX_STATEMENT_CHARS])]


def statement(line: str) -> Statement:
    """``line`` read as a statement (module doc), its first ``MAX_STATEMENT_CHARS``."""
    line = line[:MAX_STATEMENT_CHARS]
    values: dict[str, set[str]] = {}
    rest = []
    last = 0
    for m, kind, value in _values(line):
        values.setdefault(kind, set()).add(value)
        rest.append(line[last : m.start()])
        last = m.end()
    rest.append(line[last:])
    text = " ".join(rest)
    words = [m.group(0) for m in _WORD.finditer(text)]
    subject: set[str] = set()
    names: set[str] = set()
    announces = False
    for n, w in enumerate(words):
        low = w.lower().removesuffix("'s").removesuffix("\u2019s")
        if low in ANNOUNCED:
            announces = True
            continue
        if low in _DAYS or (low in _MONTHS and (len(low) > 3 or w[0].isupper())):
            values.setdefault("date", set()).add(_DAYS.get(low, low))
            continue
        if low in STOP_WORDS or len(low) < 3 or low.isdigit():
            continue
        if n and w[0].isupper() and w[1:].islower():
            names.add(low)  # maybe a value (the new vet's name), maybe the subject
        subject.add(stem_prefix(low))
    if re.search(r"\bfrom now on\b|\bno longer\b|\bnot any ?more\b", line, re.I):
        announces = True
    return Statement(
        frozenset(subject),
        {k: frozenset(v) for k, v in values.items()},
        announces,
        frozenset(stem_prefix(n) for n in names),
    )


def _same_fact(a: Statement, b: Statement, asked: frozenset[str]) -> bool:
    """``a`` and the newer ``b`` state one fact with different values (module doc)."""
    # names one holds and the other not, the question does not ask about
    names = (a.names ^ b.names) & (a.subject ^ b.subject) - asked
    sa, sb = a.subject - names, b.subject - names
    held = asked & sa  # what the question asks that the older one is about
    both = held & sb
    if not both or 2 * len(held) < len(asked):
        return False
    if b.announces and _names_old_value(a, b):
        return True  # "a new number, 509-555-0193; the old 509-555-0148 stops working"
    if len(held - both) > 1 or (len(both) < 2 and both != asked):
        return False
    if any(a.values[k] != b.values[k] for k in a.values.keys() & b.values.keys()):
        return True
    # a name each holds and the other not: another value of the subject they share
    other_names = bool(a.names - b.names) and bool(b.names - a.names)
    return other_names and (b.announces or len(sa & sb) >= 2)


def _about_it(a: Statement, b: Statement, asked: frozenset[str]) -> bool:
    """``b`` holds every word of the question ``a`` holds, but one at most, and one
    at least."""
    held = asked & a.subject
    return bool(held & b.subject) and len(held - b.subject) <= 1


def _names_old_value(a: Statement, b: Statement) -> bool:
    """``b`` names a value of ``a`` and gives another of its kind ("5:35/km (was 5:45)")."""
    return any(
        _named(a.values[k] & b.values[k]) and b.values[k] - a.values[k]
        for k in (a.values.keys() & b.values.keys()) - {"date"}
    )


def _named(values: frozenset[str]) -> bool:
    """Some of ``values`` say which one (not "2" or "14"): a time, an amount, a code,
    a number of three digits or more."""
    return any(sum(c.isdigit() for c in v) >= 3 or not v.isdigit() for v in values)


def _restates(a: str, b: str) -> bool:
    """Line ``b`` says what line ``a`` says with another value: they share most of
    their words (at least ``SHARED`` of the shorter line's, and at least
    ``MIN_WORDS``), and what the shorter says beyond the longer is values, stop words
    and words of change, one value at least differing ("the ferry ticket code is
    FERRY-1111 for the trip" / "... is FERRY-9999 now"; not "Team offsite: booked the
    venue" / "Team offsite planning: venue shortlist", two events)."""
    wa, wb = _line_words(a), _line_words(b)
    if wa == wb:
        return False
    short, long = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
    shared = len(wa & wb)
    if shared < MIN_WORDS or shared < SHARED * len(short):
        return False
    extra = short - long
    if not all(_has_digit(w) or w in STOP_WORDS or w in ANNOUNCED for w in extra):
        return False
    return any(_has_digit(w) for w in extra | (long - short))


SHARED = 0.6
MIN_WORDS = 3


def _line_words(line: str) -> set[str]:
    return {w for w in re.findall(r"\w+", line.lower()) if len(w) > 1 or w.isdigit()}


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def newer_value(
    old: tuple[str, Statement],
    new: tuple[str, Statement],
    asked: frozenset[str],
    old_day: date | None,
    new_day: date | None,
) -> bool:
    """``new`` (a line and its statement, dated ``new_day``) states the fact of
    ``old`` (dated ``old_day``; None: a curated entry) with another value, later."""
    if new_day is None:
        return False
    if old_day is None:  # a curated entry: undated, newer only when the note says so
        return new[1].announces and _same_fact(old[1], new[1], asked)
    if new_day <= old_day or not _about_it(old[1], new[1], asked):
        return False
    return _restates(old[0], new[0]) or (
        new[1].announces and _names_old_value(old[1], new[1]) and _same_fact(old[1], new[1], asked)
    )


class Supersession(Stage):
    name = "supersession"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and bool(ctx.q.terms)

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        look = hits[: ctx.depth]
        ctx.rows.need([h.id for h in look])
        views = [ctx.view(h) for h in look]
        words = [*ctx.q.terms, *(w for p in ctx.q.exact_parts for w in p)]
        asked = frozenset(stem_prefix(w) for w in words if w not in ASKING_FOR)
        kinds = {
            ASKED_KIND[w] for w in re.findall(r"\w+", ctx.req.query.lower()) if w in ASKED_KIND
        }
        # a hit's day and kind are cheap; its statement is parsed when first compared
        dates: list[tuple[date | None, bool] | None] = [
            None if v is None else self._date(ctx, v) for v in views
        ]
        parsed: dict[int, tuple[str, Statement]] = {}

        def fact(k: int) -> tuple[str, Statement]:
            if k not in parsed:
                line = views[k].best_text  # type: ignore[union-attr]
                parsed[k] = (line, statement(line))
            return parsed[k]

        order = list(range(len(look)))
        raised: set[int] = set()
        marks: dict[int, dict[str, str]] = {}
        for i in range(min(HEAD, len(look))):
            old = dates[i]
            if old is None or i in raised or (old[0] is None and not old[1]):
                continue  # gone, moved up itself, or undated and not curated
            held = asked & fact(i)[1].subject
            if not held or 2 * len(held) < len(asked):
                continue  # not about what is asked: no fact of it to supersede
            best: tuple[bool, date, int] | None = None
            for j, new in enumerate(dates):
                if j == i or new is None or new[0] is None:
                    continue
                if old[0] is not None and new[0] <= old[0]:
                    continue
                low = views[j].best_text.lower()  # type: ignore[union-attr]
                if not any(has_word_with_prefix(low, w) for w in held):
                    continue  # shares no word of the question with it
                if newer_value(fact(i), fact(j), asked, old[0], new[0]):
                    key = (bool(kinds & fact(j)[1].values.keys()), new[0], -j)
                    if best is None or key > best:
                        best = key
            if best is None:
                continue
            j = -best[2]
            pos_i, pos_j = order.index(i), order.index(j)
            vi, vj = views[i], views[j]
            assert vi is not None and vj is not None
            marks.setdefault(i, {})["supersededBy"] = self._cite(ctx, look[j], vj)
            marks.setdefault(j, {})["supersedes"] = self._cite(ctx, look[i], vi)
            if pos_j > pos_i:
                order.insert(pos_i, order.pop(pos_j))
                raised.add(j)
        if not marks:
            return hits
        out = [look[k].with_part(self.name, marks[k]) if k in marks else look[k] for k in order]
        return rescored(out + hits[ctx.depth :], raised={look[k].id for k in raised})

    @staticmethod
    def _date(ctx: RunContext, v: View) -> tuple[date | None, bool]:
        """(its day or None, whether it is a curated entry)."""
        row = v.row
        curated = row.source == "memory" and is_curated_root(row.path)
        return (None if curated else hit_day(row, ctx.tz)), curated

    @staticmethod
    def _cite(ctx: RunContext, h: Candidate, v: View) -> str:
        span = ctx.spans.get(h.id)
        start, end = (v.row.start_line, v.row.end_line) if span is None else (span.start, span.end)
        return citation(v.row.path, start, end)
