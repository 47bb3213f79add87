"""``duplicates`` and ``conflicts``: two curated entries that say the same thing, or
the same thing with another value.

* **duplicates**: their subject words are mostly the same (Jaccard ``SAME`` or more,
  three words at least), their values the same.
* **conflicts**: they share most of their subject words (``SHARED`` of the
  smaller's, two at least) and their words, in order, differ in one place only
  (words added or left out aside, one at most not a stop word), where each gives a
  value: "rotates every 90 days" / "every 60 days". Two places ("Flat 3 rent 900" /
  "Flat 4 rent 950", "item1 is 5" / "item2 is 7") are two things, not one fact
  twice.

Two entries about different people ("Dana's standup", "Priya's standup"), or each
with a subject word the other lacks ("Oskar's dentist", "Oskar's book club"), are
about different things. An entry is compared only with those sharing one of its
two rarest subject words (held by ``MAX_KEY_SHARE`` entries at most), so the check
grows with the entries, not with their pairs.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict

from indexer.api import AuditFinding
from indexer.errors import checkpoint
from indexer.search.audit.facts import KINDS, MAX_KEY_SHARE, owners_of, said, values_of
from indexer.search.audit.notes import Entry
from indexer.search.query.parse import STOP_WORDS
from indexer.search.stages.supersede import MAX_STATEMENT_CHARS, Statement

__all__ = ["SAME", "SHARED", "pair_findings"]

SAME = 0.75
SHARED = 0.6
_TOKEN = re.compile(r"[^\W_]+(?:[-:./'’][^\W_]+)*")


def pair_findings(entries: list[Entry]) -> list[AuditFinding]:
    """Pairs of curated entries that say the same thing, or the same thing with
    different values (module doc)."""
    stated = [said(e.text) for e in entries]
    df: dict[str, int] = defaultdict(int)
    for s in stated:
        for w in s.subject:
            df[w] += 1
    by_key: dict[str, list[int]] = defaultdict(list)
    keys: list[list[str]] = []
    for n, s in enumerate(stated):
        mine = sorted((w for w in s.subject if df[w] <= MAX_KEY_SHARE), key=lambda w: (df[w], w))
        keys.append(mine[:2])
        for w in mine[:2]:
            by_key[w].append(n)
    out: list[AuditFinding] = []
    for i, a in enumerate(stated):
        checkpoint()
        others = {j for w in a.subject if df[w] <= MAX_KEY_SHARE for j in by_key.get(w, ())}
        for j in sorted(j for j in others if j > i):
            finding = _pair(entries[i], a, entries[j], stated[j])
            if finding is not None:
                out.append(finding)
    return out


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text[:MAX_STATEMENT_CHARS].lower())


def _one_place(ea: Entry, eb: Entry) -> bool:
    """Their words, in order, differ in one place, a value on each side (module doc)."""
    ta, tb = _tokens(ea.text), _tokens(eb.text)
    replaced, extra = 0, 0
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        left, right = ta[a0:a1], tb[b0:b1]
        if op == "replace" and _has_value(left) and _has_value(right):
            replaced += 1
            continue
        extra += sum(1 for w in left + right if w not in STOP_WORDS)
    return replaced == 1 and extra <= 1


def _has_value(words: list[str]) -> bool:
    return any(any(c.isdigit() for c in w) for w in words)


def _pair(ea: Entry, a: Statement, eb: Entry, b: Statement) -> AuditFinding | None:
    shared = a.subject & b.subject
    if len(shared) < 2 or owners_of(ea.text) != owners_of(eb.text):
        return None  # too little in common, or about different people
    if a.subject - b.subject and b.subject - a.subject:
        return None  # each says something the other does not: two subjects
    both = [k for k in KINDS if a.values.get(k) and b.values.get(k)]
    differ = [k for k in both if not values_of(a, k) & values_of(b, k)]
    small = min(len(a.subject), len(b.subject))
    if differ and len(shared) >= SHARED * small and _one_place(ea, eb):
        k = differ[0]
        return {
            "kind": "conflicts",
            "path": eb.path,
            "startLine": eb.start,
            "endLine": eb.end,
            "message": (
                f"says {', '.join(sorted(values_of(b, k)))} where {ea.cite} says "
                f"{', '.join(sorted(values_of(a, k)))}"
            ),
            "suggestion": "keep the one that is true and delete the other",
            "snippet": eb.text[:200],
            "other": ea.cite,
        }
    agree = (
        a.values.keys() == b.values.keys()
        and not differ
        and all(values_of(a, k) == values_of(b, k) for k in both)
    )
    if agree and len(shared) >= 3 and len(shared) >= SAME * len(a.subject | b.subject):
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
