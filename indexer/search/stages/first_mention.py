"""An ID asked about on its own ("what's OPS-2291 about?", "what happened in
INC-0442?", "remind me what RFC-19 proposes"): the note that first mentions it comes
first. An agent writes what a ticket, an incident or a proposal is when it first
comes up ("New ticket OPS-2291: the billing replica falls behind every night"); the
later notes that name it say what happened to it since, and they rank on the ID's
words alone as well as the introduction does (often better: they are shorter).

Asked on its own means: the query holds an exact token (an ID, a code) and no other
word that any of the hits holding the token contains (words that ask the assistant,
"remind me", "tell me", do not count), no time ("last week": the
window decides) and no word that asks for the newest state ("status", "now",
"latest": the later notes are the answer). Then, of the hits holding the token
that are dated (daily logs by their file names, transcripts by their messages), the
earliest takes the place of the best ranked one, and its score, which moves one
down with the rest; nothing else moves. With ``explain`` it carries
``firstMention``.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate
from indexer.search.query.parse import stem_prefix
from indexer.search.snippets import has_word_with_prefix
from indexer.search.stages.base import Stage, rescored
from indexer.search.time_scope import hit_day

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext

__all__ = ["ASKING", "NEWEST", "FirstMention"]

# Words that ask for an ID's newest state, not what it is.
NEWEST = frozenset(
    ("now", "current", "currently", "latest", "last", "status", "still", "update", "updated")
    + ("new", "newest", "recent", "recently", "progress", "today", "yet", "anymore")
)


# Words that ask the assistant for something ("remind me what RFC-19 proposes"): they
# say nothing of the notes, so a note holding one ("Reminder set: ...") is not told
# apart by it.
ASKING = frozenset(
    ("remind", "tell", "show", "explain", "recall", "remember", "describe", "summarize")
    + ("summarise", "know")
)


class FirstMention(Stage):
    name = "firstMention"

    def applies(self, ctx: RunContext) -> bool:
        q = ctx.q
        return (
            not ctx.listing
            and bool(q.exact)
            and not ctx.when.windows
            and not q.required
            and not any(t in NEWEST for t in q.terms)
        )

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        q, rows = ctx.q, ctx.rows
        head = hits[: ctx.depth]
        rows.need([h.id for h in head])
        others = [stem_prefix(t) for t in q.terms if t not in ASKING]
        dated: list[tuple[date, int]] = []  # (day, position) of the dated hits holding it
        for n, h in enumerate(head):
            row = rows.get(h.id)
            if row is None:
                continue
            text = row.text.lower()
            if not any(tok in text for tok in q.exact):
                continue
            if any(has_word_with_prefix(text, s) for s in others):
                return hits  # another word of the question tells the hits apart
            day = hit_day(row, ctx.tz)
            if day is not None:
                dated.append((day, n))
        if len(dated) < 2:
            return hits
        first_day, first = min(dated)
        place_day, place = min(dated, key=lambda d: d[1])
        if first_day == place_day:
            return hits
        out = list(hits)
        moved = out.pop(first).with_part(self.name, first_day.isoformat())
        out.insert(place, moved)
        return rescored(out, raised={moved.id})
