"""``stale``: a curated entry whose value a later dated note changed.

A note is *on the entry's fact* when it gives a value of a kind the entry states
(the last of that kind in the note: "from 09:30 to 10:15" gives 10:15) and is
about the entry's subject: the two share half the smaller one's subject words at
least, and two of them unless the smaller has two or fewer or the note names the
entry's old value; what the note says beyond the entry names no other subject
("Leila's dentist moved" is not about "Leila's rent payment"), or less than they
share; and the note names whoever the entry is about ("Dana's phone number" is not
changed by "the office has a new phone number").

The notes on the fact are read from the latest back: one that gives the entry's
own value (it was restated, or set back: "back to 09:30 as before") ends the
search, nothing stale; one that announces a change ("moved", "now", "from now
on"...) with another value makes the entry stale; one that only mentions another
value ("ran long, until 10:40") is passed over.
"""

from __future__ import annotations

import math
from collections import defaultdict

from indexer.api import AuditFinding
from indexer.errors import checkpoint
from indexer.search.audit.facts import KINDS, MAX_KEY_SHARE, norm, owners_of, said, values_of
from indexer.search.audit.notes import Entry, Note
from indexer.search.query.parse import stem_prefix
from indexer.search.stages.supersede import Statement, values_in_order
from indexer.sources.redaction import find_secrets

__all__ = ["MAX_NOTES", "stale_findings"]

MAX_NOTES = 500  # the notes on one entry's subject read, the latest first

# Words a note of change uses around its subject that name no other subject.
_CONTEXT = frozenset(
    stem_prefix(w)
    for w in ("again", "starting", "start", "starts", "effective", "onwards", "onward")
    + ("today", "tomorrow", "next", "week", "weeks", "month", "later", "soon", "also")
    + ("back", "before", "usual", "normal", "previous", "earlier", "original")
)


def _about(a: Statement, b: Statement, *, named: bool) -> bool:
    shared = len(a.subject & b.subject)
    small = min(len(a.subject), len(b.subject))
    if not shared or shared < math.ceil(small / 2):
        return False
    if not (shared >= 2 or small <= 2 or named):
        return False
    beyond = len(b.subject - a.subject - _CONTEXT)
    return beyond == 0 or (shared >= 2 and beyond < shared)


def _note_value(entry: Statement, note: Note, s: Statement) -> tuple[str, str, bool] | None:
    """(kind, the note's value of a kind the entry states, whether the note names
    the entry's value of it), or None."""
    ordered = values_in_order(note.text)
    for kind in KINDS:
        old, new = values_of(entry, kind), values_of(s, kind)
        if not old or not new:
            continue
        last = [norm(k, v) for k, v in ordered if k == kind]
        value = last[-1] if last else sorted(new - old or new)[0]
        return kind, value, bool(old & new)
    return None


def stale_findings(entries: list[Entry], notes: list[Note]) -> list[AuditFinding]:
    """Each curated entry a later dated note changed (module doc)."""
    by_word: dict[str, list[tuple[Note, Statement]]] = defaultdict(list)
    for note in notes:
        s = said(note.text)
        if any(s.values.get(k) for k in KINDS):
            for w in s.subject:
                by_word[w].append((note, s))
    for listed in by_word.values():
        listed.sort(key=lambda ns: (ns[0].day, ns[0].line), reverse=True)
    out: list[AuditFinding] = []
    for e in entries:
        checkpoint()
        finding = _stale(e, by_word)
        if finding is not None:
            out.append(finding)
    return out


def _stale(e: Entry, by_word: dict[str, list[tuple[Note, Statement]]]) -> AuditFinding | None:
    se = said(e.text)
    if not any(se.values.get(k) for k in KINDS):
        return None
    names = owners_of(e.text)
    found: dict[tuple[str, int], tuple[Note, Statement]] = {}
    for w in se.subject:
        listed = by_word.get(w, ())
        if len(listed) <= MAX_KEY_SHARE:
            found.update(((n.path, n.line), (n, s)) for n, s in listed)
    latest_first = sorted(found.values(), key=lambda ns: (ns[0].day, ns[0].line), reverse=True)
    for note, s in latest_first[:MAX_NOTES]:
        got = _note_value(se, note, s)
        if got is None or not _about(se, s, named=got[2]) or names - s.subject:
            continue
        kind, value, _named = got
        if value in values_of(se, kind):
            return None  # restated, or set back: the entry holds the latest value
        if s.announces:
            return _finding(e, note, value)
    return None


def _finding(e: Entry, note: Note, value: str) -> AuditFinding:
    """The finding; a new value that is a secret in its note (a password changed)
    is shown as a secret is, its first 4 characters (the secrets check names it)."""
    secret = any(value in found.lower() for _kind, found in find_secrets(note.text))
    shown = value[:4] + "…" if secret else value
    advice = "a secret; move it out of memory" if secret else "or say why the old value holds"
    return {
        "kind": "stale",
        "path": e.path,
        "startLine": e.start,
        "endLine": e.end,
        "message": f"{note.cite} ({note.day.isoformat()}) changed it: now {shown}",
        "suggestion": f"update the entry to {shown} ({advice})",
        "snippet": e.text[:200],
        "other": note.cite,
        "newer": shown,
    }
