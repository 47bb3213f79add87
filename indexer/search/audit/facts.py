"""``stale``, ``duplicates`` and ``conflicts``: curated entries read as statements
of facts (``supersede.statement``: subject words, values by kind).

* **stale**: a dated note that announces a change ("moved", "now", "from now
  on"...) about the entry's subject gives a value of a kind the entry states, and
  the entry does not hold that new value (the last of its kind in the note: "from
  09:30 to 10:15" gives 10:15). About its subject: the two share half the smaller
  one's subject words at least, and two of them, unless the smaller has two or
  fewer or the note names the entry's old value; what the note says beyond the
  entry names no other subject ("Leila's dentist moved" is not about "Leila's rent
  payment"); and the note names whoever the entry is about ("Dana's phone number"
  is not changed by "the office has a new phone number"). A note restating the
  entry's value, or a value of another kind, changes nothing. The latest note on
  the fact decides: the entry is stale unless it holds that note's value.
* **duplicates**: two entries whose subject words are mostly the same (Jaccard
  ``SAME`` or more, three words at least) and whose values agree.
* **conflicts**: two entries that share most of their subject words (``SHARED`` of
  the smaller's, three at least) and give different values of one kind.

Two entries about different people ("Dana's standup", "Priya's standup"), or each
with a subject word the other lacks ("Oskar's dentist", "Oskar's book club"), are
about different things: neither a duplicate nor a conflict.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

from indexer.api import AuditFinding
from indexer.errors import checkpoint
from indexer.search.audit.notes import Entry, Note
from indexer.search.query import STOP_WORDS, stem_prefix
from indexer.search.stages.supersede import Statement, statement, values_in_order

__all__ = ["SAME", "SHARED", "fact_findings", "owners_of", "stale_findings"]

SAME = 0.75
SHARED = 0.6
_KINDS = ("time", "date", "money", "percent", "code", "number")


_OWNER = re.compile(r"(?<![\w'’])([A-Z][a-z]{2,})['’]s\b")


def owners_of(text: str) -> frozenset[str]:
    """Whose a line is about, stemmed as subjects are: the names it gives in the
    possessive ("Dana's phone", "the Hendricks' boiler" not)."""
    return frozenset(
        stem_prefix(m.group(1).lower())
        for m in _OWNER.finditer(text)
        if m.group(1).lower() not in STOP_WORDS
    )


# Words a note of change uses around its subject that name no other subject.
_CONTEXT = frozenset(
    stem_prefix(w)
    for w in ("again", "starting", "start", "starts", "effective", "onwards", "onward")
    + ("today", "tomorrow", "next", "week", "weeks", "month", "later", "soon", "also")
)


def _about(a: Statement, b: Statement, *, named: bool) -> bool:
    """The note ``b`` is about the entry ``a``'s subject: they share half the smaller
    one's subject words (two, unless the smaller has two or fewer or ``b`` names
    ``a``'s value), and what ``b`` says beyond ``a`` names no other subject ("Leila's
    dentist moved" is not about "Leila's rent payment"), or less than they share."""
    shared = len(a.subject & b.subject)
    small = min(len(a.subject), len(b.subject))
    if not shared or shared < math.ceil(small / 2):
        return False
    if not (shared >= 2 or small <= 2 or named):
        return False
    beyond = len(b.subject - a.subject - _CONTEXT)
    return beyond == 0 or (shared >= 2 and beyond < shared)


def _note_value(entry: Statement, note: Note, said: Statement) -> tuple[str, bool] | None:
    """The note's value of a kind the entry states (the last of that kind in the
    note), and whether the note names the entry's value of it; None if none."""
    ordered = values_in_order(note.text)
    for kind in _KINDS:
        old, new = entry.values.get(kind), said.values.get(kind)
        if not old or not new:
            continue
        last = [v for k, v in ordered if k == kind]
        value = last[-1] if last else sorted(new - old or new)[0]
        return value, bool(old & new)
    return None


def stale_findings(entries: list[Entry], notes: list[Note]) -> list[AuditFinding]:
    """Each curated entry a later dated note changed (module doc)."""
    by_word: dict[str, list[tuple[Note, Statement]]] = defaultdict(list)
    for note in notes:
        said = statement(note.text)
        if said.announces:
            for w in said.subject:
                by_word[w].append((note, said))
    out: list[AuditFinding] = []
    for e in entries:
        checkpoint()
        se = statement(e.text)
        if not any(se.values.get(k) for k in _KINDS):
            continue
        names = owners_of(e.text)
        latest: tuple[Note, str] | None = None  # the latest note on its fact
        seen: set[tuple[str, int]] = set()
        for w in se.subject:
            for note, said in by_word.get(w, ()):
                if (note.path, note.line) in seen:
                    continue
                seen.add((note.path, note.line))
                said_value = _note_value(se, note, said)
                if said_value is None or not _about(se, said, named=said_value[1]):
                    continue
                if names - said.subject:
                    continue  # about someone or something the note does not name
                if latest is None or (note.day, note.line) > (latest[0].day, latest[0].line):
                    latest = (note, said_value[0])
        if latest is None or any(latest[1] in v for v in se.values.values()):
            continue  # no note on it, or the latest says what the entry says
        note, value = latest
        out.append(
            {
                "kind": "stale",
                "path": e.path,
                "startLine": e.start,
                "endLine": e.end,
                "message": f"{note.cite} ({note.day.isoformat()}) changed it: now {value}",
                "suggestion": f"update the entry to {value} (or say why the old value holds)",
                "snippet": e.text[:200],
                "other": note.cite,
                "newer": value,
            }
        )
    return out


def fact_findings(entries: list[Entry]) -> list[AuditFinding]:
    """Pairs of curated entries that say the same thing, or the same thing with
    different values (module doc)."""
    said = [statement(e.text) for e in entries]
    by_word: dict[str, list[int]] = defaultdict(list)
    for n, s in enumerate(said):
        for w in s.subject:
            by_word[w].append(n)
    out: list[AuditFinding] = []
    done: set[tuple[int, int]] = set()
    for i, a in enumerate(said):
        checkpoint()
        for j in sorted({j for w in a.subject for j in by_word[w] if j > i}):
            if (i, j) in done:
                continue
            done.add((i, j))
            finding = _pair(entries[i], a, entries[j], said[j])
            if finding is not None:
                out.append(finding)
    return out


def _pair(ea: Entry, a: Statement, eb: Entry, b: Statement) -> AuditFinding | None:
    shared = a.subject & b.subject
    if len(shared) < 3 or owners_of(ea.text) != owners_of(eb.text):
        return None  # too little in common, or about different people or places
    if a.subject - b.subject and b.subject - a.subject:
        return None  # each says something the other does not: two subjects
    both = a.values.keys() & b.values.keys()
    differ = sorted(k for k in both if not a.values[k] & b.values[k])
    if differ and len(shared) >= SHARED * min(len(a.subject), len(b.subject)):
        k = differ[0]
        return {
            "kind": "conflicts",
            "path": eb.path,
            "startLine": eb.start,
            "endLine": eb.end,
            "message": (
                f"says {', '.join(sorted(b.values[k]))} where {ea.cite} says "
                f"{', '.join(sorted(a.values[k]))}"
            ),
            "suggestion": "keep the one that is true and delete the other",
            "snippet": eb.text[:200],
            "other": ea.cite,
        }
    union = a.subject | b.subject
    agree = all(a.values[k] == b.values[k] for k in both) and (a.values.keys() == b.values.keys())
    if agree and len(shared) >= SAME * len(union):
        return {
            "kind": "duplicates",
            "path": eb.path,
            "startLine": eb.start,
            "endLine": eb.end,
            "message": f"says what {ea.cite} says",
            "suggestion": "keep one of the two (the clearer wording) and delete the other",
            "snippet": eb.text[:200],
            "other": ea.cite,
        }
    return None
