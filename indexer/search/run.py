"""One search request, from its query to its results: a ``RunContext`` (what this
request has read and understood), the pipeline of stages over it
(``pipeline.walk``: retrieval, fusion, the ranking rules, dedup, the cut), and the
result objects (``results``). The pooled ``Searcher`` it runs on keeps nothing of
it.

Time words ("yesterday", "in October"; ``when``) are read as windows of days and
taken out of what is searched; a question about a name memory lacks is capped in
relevance (``names``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexer.api import SearchRequest, SearchResponse
from indexer.search.candidates import Notes
from indexer.search.facts import IndexFacts
from indexer.search.pipeline import walk
from indexer.search.results import envelope, explained_trace, render_results
from indexer.search.stages.context import RunContext
from indexer.search.stages.words import EXACT_BOOST

if TYPE_CHECKING:
    from indexer.config import Config
    from indexer.search.snapshot.live import LiveIndex
    from indexer.store import IndexStore
    from providers.base import EmbeddingProvider

__all__ = ["search", "skipped"]


def search(
    cfg: Config,
    store: IndexStore,
    provider: EmbeddingProvider | None,
    live: LiveIndex | None,
    req: SearchRequest,
    facts: IndexFacts,
) -> SearchResponse:
    """``memory_search`` for ``req``."""
    ctx = RunContext(cfg, store, provider, live, req, facts)
    hits = walk(ctx)
    if req.explain:
        ctx.notes.explain = _settings(ctx)
    results = render_results(ctx, hits)
    out = envelope(ctx.notes, provider, results, ctx.mode, ctx.fallback)
    if ctx.stopped is not None:
        out["abstained"] = ctx.stopped
    if req.explain:
        out.setdefault("explain", {})["stages"] = explained_trace(ctx)
    if ctx.when.windows:
        out["time"] = [
            {"said": w.said, "from": w.first.isoformat(), "to": w.last.isoformat()}
            for w in ctx.when.windows
        ]
    return out


def skipped(provider: EmbeddingProvider | None, why: str) -> SearchResponse:
    """The answer to a gated query that is not searched (small talk, a slash command)."""
    out = envelope(Notes(), provider, [], "skipped", None)
    out["skipped"] = why
    return out


def _settings(ctx: RunContext) -> dict[str, object]:
    """explain: the settings that ranked this query."""
    qc, h = ctx.cfg.query, ctx.cfg.hybrid
    if ctx.listing:
        return {"timeOnly": True, "dateBoost": qc.dateBoost}
    out: dict[str, object] = {
        "fusion": h.fusion,
        "vectorWeight": round(ctx.weight, 4),
        "textWeight": round(1.0 - ctx.weight, 4),
        **({} if ctx.share is None else {"queryWordsHeld": round(ctx.share, 4)}),
        **({} if ctx.scale is None else {"scoreScale": round(ctx.scale, 4)}),
        "minScore": ctx.floor,
        "dateBoost": qc.dateBoost,
        "asOf": ctx.today.isoformat(),
        "exactBoost": 1.0 + EXACT_BOOST,
        "candidates": ctx.pool * ctx.deeper,
        "stagesOff": sorted(n for n, on in ctx.switches.items() if not on),
    }
    return out
