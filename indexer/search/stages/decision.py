"""A question about a decision ("did we end up selling the Volvo?", "which builder
did we go with?", "what did we settle on for the electricity?"): the note that
records the decision about its subject comes first.

An agent writes a decision down as one ("Decided: we keep the Volvo", "Agreed fix:
PgBouncer in front of checkout-db"); the notes around it discuss the options, the
quotes, the doubts, and rank on the subject's words as well as the decision does,
often better (there are more of them, and they name the options the question names).

A question asks for a decision when it holds one of ``ASKS`` (single words, or
two-word phrases). A line records one when it begins with a word of ``RECORDS`` or
such a word labels what follows (``_RECORDED``). Of the first ``depth``
candidates, the hits whose one line holds such a word and the most of the
question's other words (one at least) move, in their order, above the best ranked
hit (taking its score); nothing else moves. A question without such a word, or
whose words no decision line holds, ranks as before. With ``explain`` a moved hit
carries ``decision``: how many of the question's words its line holds.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate
from indexer.search.query.parse import stem_prefix
from indexer.search.snippets import has_word_with_prefix
from indexer.search.stages.base import Stage, rescored

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext

__all__ = ["ASKS", "RECORDS", "Decision", "asks_decision"]

# Words and two-word phrases with which a question asks what was decided.
ASKS = frozenset(
    ("decide", "decided", "decision", "settle", "settled", "agree", "agreed", "choose")
    + ("chose", "opt", "opted", "end up", "ended up", "go with", "going with", "went with")
    + ("say yes", "said yes", "say no", "said no", "pick", "picked")
)
# Words with which a note records a decision.
RECORDS = frozenset(
    ("decided", "decision", "agreed", "settled", "chose", "chosen", "opted", "picked")
)
_WORD = re.compile(r"[\w']+")
# A line that records a decision: it begins with a word of RECORDS (after a list
# marker), or such a word labels what follows ("Infra meeting, decided: ...",
# "Decided with Sam: ..."; not a time's colon, "decided at 10:30"). A person saying
# "I decided to take up pottery" in a conversation records no decision of the kind
# asked about.
_RECORDED = re.compile(
    r"^\W*(?:" + "|".join(sorted(RECORDS)) + r")\b"
    r"|\b(?:" + "|".join(sorted(RECORDS)) + r")\b[^:.\n]{0,24}(?<!\d):(?!\d)"
)
# The question's words that say it asks for a decision, not what about.
_ASKING_WORDS = frozenset(w for p in ASKS for w in p.split())


def asks_decision(question: str) -> bool:
    words = [w.lower() for w in _WORD.findall(question)]
    pairs = {f"{a} {b}" for a, b in zip(words, words[1:], strict=False)}
    return any(w in ASKS for w in words) or bool(pairs & ASKS)


class Decision(Stage):
    name = "decision"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and asks_decision(ctx.req.query)

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        subject = [stem_prefix(t) for t in ctx.q.terms if t not in _ASKING_WORDS]
        if not hits or not subject:
            return hits
        head = hits[: ctx.depth]
        ctx.rows.need([h.id for h in head])
        held: dict[int, int] = {}  # position -> subject words its decision line holds
        for n, h in enumerate(head):
            row = ctx.rows.get(h.id)
            if row is None:
                continue
            best = 0
            for line in row.text.lower().split("\n"):
                if not _RECORDED.search(line):
                    continue
                best = max(best, sum(1 for s in subject if has_word_with_prefix(line, s)))
            if best:
                held[n] = best
        if not held:
            return hits
        most = max(held.values())
        moved = [n for n in sorted(held) if held[n] == most]
        if moved == list(range(len(moved))):
            return hits  # already first
        lifted = [hits[n].with_part(self.name, most) for n in moved]
        gone = set(moved)
        rest = [h for n, h in enumerate(hits) if n not in gone]
        return rescored(lifted + rest, raised={h.id for h in lifted})
