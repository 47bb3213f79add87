"""``unfindable``: a recall self-test of the index. Each curated entry is asked for
with a question made of its own rarest words (the fewest lines of memory hold them,
at most ``WORDS``), searched as the agent searches (``memory_search``, its mode and
ranking, the first ``TOP`` results); an entry none of the results cites — its file,
a line range that overlaps it — is a finding: written in words nobody asks with, or
buried under near-duplicates. Entries of fewer than two content words are not
asked for (nothing to ask with), nor more than ``MAX_PROBES`` of them, nor any
after ``BUDGET_S`` seconds; an entry is read to its first ``MAX_TEXT`` characters."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable

from indexer.api import AuditFinding, SearchRequest, SearchResponse
from indexer.errors import checkpoint
from indexer.search.audit.notes import Entry
from indexer.search.query.parse import STOP_WORDS
from indexer.sources.redaction import redact

__all__ = ["MAX_PROBES", "TOP", "WORDS", "probe", "unfindable_findings"]

TOP = 5
WORDS = 4
MAX_PROBES = 400
MAX_TEXT = 2_000  # an entry is read to here (a statement is a line or two)
MAX_WORD = 40
BUDGET_S = 20.0  # the questions stop after this long (``checked.asked`` says how many)
_WORD = re.compile(r"[^\W\d_][\w'’-]*[^\W_]|[^\W\d_]{3,}")


def _words(text: str) -> list[str]:
    """Its content words, once each, in order; a "word" over ``MAX_WORD`` characters is
    no word anybody asks with (and would make the question as long)."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(text[:MAX_TEXT]):
        low = w.lower()
        if 3 <= len(low) <= MAX_WORD and low not in STOP_WORDS and low != "redacted":
            seen.setdefault(low)
    return list(seen)


def probe(entry: Entry, df: Counter[str]) -> str | None:
    """The question asked for ``entry``: its rarest content words, in its order (a
    secret in it is not one of them)."""
    words = _words(redact(entry.text))
    if len(words) < 2:
        return None
    order = {w: n for n, w in enumerate(words)}
    rare = set(sorted(words, key=lambda w: (df[w], order[w]))[:WORDS])
    return " ".join(w for w in words if w in rare)


def unfindable_findings(
    entries: list[Entry],
    files: dict[str, list[str]],
    search: Callable[[SearchRequest], SearchResponse],
) -> tuple[list[AuditFinding], int]:
    """The entries their own question does not find, and how many were asked for."""
    df: Counter[str] = Counter()  # lines holding each word (an entry is a line or two)
    for lines in files.values():
        for line in lines:
            df.update(_words(line))
            checkpoint()
    out: list[AuditFinding] = []
    asked = 0
    until = time.monotonic() + BUDGET_S
    for e in entries:
        if asked >= MAX_PROBES or time.monotonic() > until:
            break
        query = probe(e, df)
        if query is None:
            continue
        checkpoint()
        asked += 1
        got = search(SearchRequest(query, max_results=TOP, sources=("memory",)))
        if any(
            r["path"] == e.path and r["startLine"] <= e.end and r["endLine"] >= e.start
            for r in got["results"]
        ):
            continue
        out.append(
            {
                "kind": "unfindable",
                "path": e.path,
                "startLine": e.start,
                "endLine": e.end,
                "message": f"not in the first {TOP} results for its own words: {query!r}",
                "suggestion": "reword it with the words you would ask with, or merge it "
                "with the entries that crowd it out",
                "snippet": e.text[:200],
                "query": query,
            }
        )
    return out, asked
