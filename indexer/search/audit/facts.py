"""Curated entries and dated notes read as statements of facts
(``supersede.statement``: subject words, values by kind), for ``stale`` (``stale``)
and ``duplicates``/``conflicts`` (``pairs``): whose an entry is about, a value in one
spelling (09:30 and 9:30, 5pm and 17:00), and the bounds that keep both linear.
"""

from __future__ import annotations

import re

from indexer.search.query.parse import STOP_WORDS, stem_prefix
from indexer.search.stages.supersede import MAX_STATEMENT_CHARS, Statement, statement

__all__ = ["KINDS", "MAX_KEY_SHARE", "norm", "owners_of", "said", "values_of"]

KINDS = ("time", "date", "money", "percent", "code", "number")
# A subject word held by more statements than this picks no candidates (the
# statements sharing only such words are not compared: "the", "meeting"...).
MAX_KEY_SHARE = 200

_OWNER = re.compile(r"(?<![\w'’])([A-Z][a-z]{2,})['’]s\b")
_TIME = re.compile(r"^(\d{1,2})(?:[:h.](\d{2}))?(am|pm)?$")


def said(text: str) -> Statement:
    """``text`` (its first ``MAX_STATEMENT_CHARS``) read as a statement."""
    return statement(text[:MAX_STATEMENT_CHARS])


def owners_of(text: str) -> frozenset[str]:
    """Whose a line is about, stemmed as subjects are: the names it gives in the
    possessive ("Dana's phone"; "the Hendricks' boiler" not)."""
    return frozenset(
        stem_prefix(m.group(1).lower())
        for m in _OWNER.finditer(text[:MAX_STATEMENT_CHARS])
        if m.group(1).lower() not in STOP_WORDS
    )


def norm(kind: str, value: str) -> str:
    """A value in one spelling: a time as HH:MM on 24 hours (9:30, 09.30, 9h30 ->
    09:30; 5pm -> 17:00; noon, midnight); others as read."""
    if kind != "time":
        return value
    if value in ("noon", "midnight"):
        return "12:00" if value == "noon" else "00:00"
    m = _TIME.match(value)
    if m is None:
        return value
    hour, minute = int(m.group(1)), int(m.group(2) or 0)
    if m.group(3) == "pm" and hour < 12:
        hour += 12
    elif m.group(3) == "am" and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute:02d}"


def values_of(s: Statement, kind: str) -> frozenset[str]:
    return frozenset(norm(kind, v) for v in s.values.get(kind, ()))
