"""The ranking pipeline: ``STAGES``, the one ordered list of what a search does to
its candidates, and ``walk``, which runs it. This list is the only place where the
order of results is decided.

Each stage (``stages/``) has a name, which is its switch (``query.stages.<name>``
in the config, ``stages`` in a request) unless it is a core step, and its key in
``explain``. ``walk`` runs every stage that is switched on and has something to do
for the query, keeps every list sorted by score (a stage that breaks that is a
bug, raised here), and, with ``explain``, traces what each stage changed: the hits
it moved, added or dropped among the first places, with their scores before and
after and the stage's reason.

To add a ranking rule: write one ``Stage`` in ``stages/``, put it in ``STAGES``
where it belongs, give it a switch in ``config/stages.py`` (``StagesConfig``), and measure
it with ``bench/ablate.py`` (docs/RETRIEVAL.md: a stage is on by default only where
it helps a set it was not made on).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from indexer.errors import checkpoint
from indexer.search.candidates import Candidate
from indexer.search.stages.balance import Balance, Mmr
from indexer.search.stages.base import Stage, is_sorted
from indexer.search.stages.context import Move, Trace
from indexer.search.stages.decision import Decision
from indexer.search.stages.dedup import Dedup
from indexer.search.stages.final import Abstain, Cut, Floor
from indexer.search.stages.first_mention import FirstMention
from indexer.search.stages.fuse import Fusion, QueryWeight
from indexer.search.stages.rerank import Rerank
from indexer.search.stages.retrieve import AbsentToken, Keyword, TimeList, Vector
from indexer.search.stages.signals import Decay, EntrySignals, Rules
from indexer.search.stages.supersede import Supersession
from indexer.search.stages.time import DateBoost, UndatedMatch, WindowFill
from indexer.search.stages.words import ExactAnchor, ExactBoost, Subject, Ties

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext

__all__ = ["STAGES", "StageOrderError", "walk"]

STAGES: tuple[Stage, ...] = (
    # retrieval
    AbsentToken(),
    TimeList(),
    Keyword(),
    ExactBoost(),
    ExactAnchor(),
    Vector(),
    Ties(),
    QueryWeight(),
    Fusion(),
    # ranking rules
    Subject(),
    EntrySignals(),
    Rules(),
    Decay(),
    DateBoost(),
    UndatedMatch(),
    WindowFill(),
    FirstMention(),
    Decision(),
    Rerank(),
    # one result per place, then the mix
    Dedup(),
    Supersession(),
    Balance(),
    Mmr(),
    # the end
    Floor(),
    Cut(),
    Abstain(),
)

# How many places of the list the trace looks at.
TRACED = 10


class StageOrderError(AssertionError):
    """A stage returned hits that are not sorted by score (a bug in that stage)."""


def walk(ctx: RunContext) -> list[Candidate]:
    """The hits of ``ctx``'s query, best first (``ctx.stopped`` when a stage ended
    the search); with ``explain``, ``ctx.trace`` says what each stage did."""
    run = [s for s in STAGES if (not s.switch or ctx.on(s.name))]
    for s in run:
        if s.applies(ctx):
            s.prepare(ctx)
    hits: list[Candidate] = []
    trace = ctx.trace if ctx.req.explain else None
    for s in STAGES:
        if s.switch and not ctx.on(s.name):
            if trace is not None:
                trace.append(Trace(s.name, on=False))
            continue
        if not s.applies(ctx):
            continue
        checkpoint()  # the client still waits
        t0 = time.perf_counter()
        before = hits
        hits = s(ctx, hits)
        if not is_sorted(hits):
            raise StageOrderError(f"stage {s.name} returned hits out of score order")
        if trace is not None:
            trace.append(_traced(s, before, hits, time.perf_counter() - t0))
        if ctx.stopped is not None:
            return []
    return hits


def _traced(s: Stage, before: list[Candidate], after: list[Candidate], seconds: float) -> Trace:
    """What ``s`` changed among the first ``TRACED`` places: each hit it rescored,
    gave a part or added (not those that only shifted as another moved), from where
    to where, its score before and after, and the part; the hits it dropped."""
    was = {h.id: (n, h) for n, h in enumerate(before)}
    now = {h.id for h in after}
    t = Trace(s.name, ms=round(seconds * 1000, 2))
    if not before:
        t.found = len(after)
        return t
    for n, h in enumerate(after[:TRACED]):
        old = was.get(h.id)
        mine = h.parts.get(s.name)
        if old is not None and old[1].score == h.score and old[1].parts.get(s.name) == mine:
            continue  # moved only as another hit moved, or not at all
        t.changed.append(
            Move(
                h.id,
                to=n + 1,
                score=round(h.score, 4),
                start=None if old is None else old[0] + 1,
                before=None if old is None else round(old[1].score, 4),
                why=h.parts.get(s.name),
            )
        )
    if s.traces_drops:
        t.dropped = [
            Move(h.id, start=n + 1, before=round(h.score, 4))
            for n, h in enumerate(before[:TRACED])
            if h.id not in now
        ]
    return t
