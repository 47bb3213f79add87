"""A question about a decision ("did we end up selling the Volvo?", "which builder
did we go with?", "what did we settle on for the electricity?"): the note that
records the decision about its subject comes first.

An agent writes a decision down as one ("Decided: we keep the Volvo", "Agreed fix:
PgBouncer in front of checkout-db"); the notes around it discuss the options, the
quotes, the doubts, and rank on the subject's words as well as the decision does,
often better (there are more of them, and they name the options the question names).

A question asks for a decision when it holds one of ``ASKS`` (single words, or
two-word phrases). A line records one when it begins with a word of ``RECORDS`` or
such a word labels what follows (``_RECORDED``). Of the
candidates, the hits whose one line holds such a word and the most of the question's
other words (one at least) move, in their order, above the best ranked hit; nothing
else moves. A question without such a word, or whose words no decision line holds,
ranks as before. With ``explain`` a moved hit carries ``decision``.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from indexer.search.candidates import Candidate, ChunkRows
from indexer.search.query import ParsedQuery, stem_prefix
from indexer.search.snippets import has_word_with_prefix

__all__ = ["ASKS", "RECORDS", "decision_first"]

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


def decision_first(
    hits: list[Candidate], q: ParsedQuery, question: str, rows: ChunkRows, reach: int
) -> list[Candidate]:
    """``hits`` with the decisions about the question's subject first (module doc),
    looked for among the first ``reach`` candidates."""
    if not hits or not asks_decision(question):
        return hits
    subject = [stem_prefix(t) for t in q.terms if t not in _ASKING_WORDS]
    if not subject:
        return hits
    head = hits[:reach]
    rows.need([h.id for h in head])
    held: dict[int, int] = {}  # position -> subject words its decision line holds
    for n, h in enumerate(head):
        row = rows.get(h.id)
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
    top = hits[0].score
    lifted = [_above(hits[n], top, len(moved) - k) for k, n in enumerate(moved)]
    gone = set(moved)
    return lifted + [h for n, h in enumerate(hits) if n not in gone]


def _above(h: Candidate, top: float, steps: int) -> Candidate:
    """``h`` ranked ``steps`` places above a hit of score ``top``; the score it shows
    (and ``minScore`` judges) stays its own."""
    score = top
    for _ in range(steps):
        score = math.nextafter(score, math.inf)
    shown = h.score if h.shown is None else h.shown
    return replace(h, score=score, shown=shown, decision=True)
