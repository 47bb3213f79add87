"""The mix of the results.

* ``balance``: when both sources are searched, each first n results hold at least
  ``floor(n x query.memoryShare)`` memory-file hits while there are any among the
  first ``depth``: the larger session corpus must not crowd memory files out. A
  memory hit moved up takes the score of the hit it moves above. (It is the same
  rule for every n, so the first results do not depend on maxResults.)
* ``mmr`` (off by default): greedy ``lambda x relevance - (1 - lambda) x
  similarity`` to the results already chosen, similarity being the Jaccard overlap
  of word sets, over the first ``depth`` hits; exact hits first (taking the best
  score). A hit moved down takes the score of the one above it.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate
from indexer.search.stages.base import Stage, rescored

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext

__all__ = ["Balance", "Mmr"]

_WORDS = re.compile(r"[a-z0-9_]+")


class Balance(Stage):
    name = "balance"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and ctx.facts.both_sources and ctx.cfg.query.memoryShare > 0

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        share = ctx.cfg.query.memoryShare
        head, tail = list(hits[: ctx.depth]), list(hits[ctx.depth :])
        out: list[Candidate] = []
        raised: set[int] = set()
        have = 0
        while head:
            want = math.floor((len(out) + 1) * share + 1e-9)
            pick = 0
            if have < want and head[0].source != "memory":
                pick = next((n for n, h in enumerate(head) if h.source == "memory"), 0)
                if pick:
                    raised.add(head[pick].id)
            h = head.pop(pick)
            if h.id in raised:
                h = h.with_part(self.name, f"{have + 1} of the first {len(out) + 1} from memory")
            have += h.source == "memory"
            out.append(h)
        if not raised:
            return hits
        return rescored(out + tail, raised=raised)


class Mmr(Stage):
    name = "mmr"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        lam = ctx.cfg.query.mmrLambda
        head, tail = hits[: ctx.depth], hits[ctx.depth :]
        pinned = [h for h in head if h.exact]
        pool = [h for h in head if not h.exact]
        if len(pool) <= 1:
            return hits
        hi = max(h.score for h in pool)
        lo = min(h.score for h in pool)
        span = (hi - lo) or 1.0
        ctx.rows.need([h.id for h in pool])
        words = {h.id: set(_WORDS.findall(_text(ctx, h.id).lower())) for h in pool}
        chosen: list[Candidate] = []
        while pool:

            def value(h: Candidate) -> float:
                rel = (h.score - lo) / span
                if not chosen:
                    return rel
                sim = max(_jaccard(words[h.id], words[c.id]) for c in chosen)
                return lam * rel - (1 - lam) * sim

            best = max(pool, key=value)
            chosen.append(best)
            pool.remove(best)
        out = pinned + chosen
        moved = [
            h.with_part(self.name, n + 1) if h is not head[n] else h for n, h in enumerate(out)
        ]
        return rescored(moved + tail, raised={h.id for h in pinned})


def _text(ctx: RunContext, cid: int) -> str:
    row = ctx.rows.get(cid)
    return "" if row is None else row.text


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
