"""Result objects: the pipeline's hits, in its order and with its scores, as cited
snippets (``render_results``), the answer around them (``envelope``), and the
pipeline's trace with citations (``explained_trace``). Nothing here ranks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from indexer.api import Citation, SearchResponse, SearchResult
from indexer.search.candidates import Notes
from indexer.search.stages.context import Move, RunContext, Span, View
from indexer.search.stages.dedup import citation
from indexer.sources.curated import meta_of

if TYPE_CHECKING:
    from indexer.search.candidates import Candidate
    from providers.base import EmbeddingProvider

__all__ = [
    "envelope",
    "explain_parts",
    "explained_trace",
    "render_results",
    "shown_score",
    "to_result",
]


def shown_score(score: float) -> float:
    """The score a result shows: 0..1, as the protocol says. A boost can take a
    ranking score past 1 (rules and dateBoost multiply: 0.93 x 1.5); such a result
    shows 1 (explain has the score it was ranked by), and the list keeps its order."""
    return min(score, 1.0)


def explain_parts(c: Candidate) -> dict[str, object]:
    """Why candidate ``c`` ranks where it does: how well each side matched, and what
    each stage that touched it gave it: a factor or a reason under the stage's name,
    or the stage's figures under their own (fusion's ``fused``, rerank's
    ``rerank``, supersession's ``supersededBy``) (``explain: true``)."""
    parts: dict[str, object] = {
        "bm25": round(max(0.0, -c.rank), 4),
        "exact": c.exact,
        "allWords": c.full,
        "keywordScore": round(c.text_score, 4),
    }
    if c.vector_score is not None:
        parts["cosine"] = round(c.vector_score, 4)
    if c.vector_relevance is not None and c.vector_relevance != c.vector_score:
        parts["cosineCalibrated"] = round(c.vector_relevance, 4)  # the model's scale mapped
    for stage, part in c.parts.items():  # a stage's figures under their own names
        if isinstance(part, dict):
            parts.update(part)
        else:
            parts[stage] = part
    parts["score"] = round(shown_score(c.score), 4)
    if c.score > 1.0:
        parts["rankScore"] = round(c.score, 4)  # what the list is ordered by
    return parts


def to_result(c: Candidate, view: View, span: Span | None, explain: bool) -> SearchResult:
    """The result object of candidate ``c``, whose chunk and snippet are ``view``,
    its lines ``span`` (dedup's; None: the chunk's)."""
    row = view.row
    start, end = (row.start_line, row.end_line) if span is None else (span.start, span.end)
    out: SearchResult = {
        "path": row.path,
        "startLine": start,
        "endLine": end,
        "score": round(shown_score(c.score), 4),
        "snippet": view.snippet,
        "source": row.source,
        "citation": citation(row.path, start, end),
        "snippetStartLine": view.first,
        "snippetEndLine": view.last,
        "heading": row.heading,
        "textScore": round(c.text_score, 4),
    }
    if row.source == "memory" and "<!--" in row.text:
        meta = meta_of(row.path, row.text)
        if meta.importance is not None:
            out["importance"] = meta.importance
        if meta.triggers:
            out["triggers"] = meta.triggers
        if meta.project_key:
            out["projectKey"] = meta.project_key
    if row.origin is not None:  # a transcript chunk indexed with its messages' classes
        origin, _, kind = row.origin.partition(":")
        out["provenance"] = {
            "originClass": origin,
            "sessionKind": kind or "unknown",
            "observedAt": round(row.at * 1000) if row.at is not None else 0,
        }
    if c.vector_score is not None:
        out["vectorScore"] = round(c.vector_score, 4)
    fused = c.parts.get("fusion")
    if isinstance(fused, dict) and "fused" in fused:
        out["fusedScore"] = fused["fused"]
    if span is not None and span.also:
        out["also"] = [cast(Citation, a) for a in span.also]
    if explain:
        out["explain"] = explain_parts(c)
    return out


def render_results(ctx: RunContext, hits: Sequence[Candidate]) -> list[SearchResult]:
    """The result objects of ``hits`` (the pipeline's, cut to ``maxResults``); a hit
    whose chunk is gone is skipped."""
    ctx.rows.need([h.id for h in hits])
    out: list[SearchResult] = []
    for h in hits:
        view = ctx.view(h)
        if view is not None:
            out.append(to_result(h, view, ctx.spans.get(h.id), ctx.req.explain))
    return out


def explained_trace(ctx: RunContext) -> list[dict[str, object]]:
    """The pipeline's trace as JSON, each hit by its citation."""
    ctx.rows.need([m.id for t in ctx.trace for m in (*t.changed, *t.dropped)])

    def move(m: Move) -> dict[str, object]:
        row = ctx.rows.get(m.id)
        out: dict[str, object] = {
            "citation": "(gone)"
            if row is None
            else citation(row.path, row.start_line, row.end_line)
        }
        for key, value in (
            ("from", m.start),
            ("to", m.to),
            ("before", m.before),
            ("score", m.score),
        ):
            if value is not None:
                out[key] = value
        if m.why is not None:
            out["why"] = m.why
        return out

    out: list[dict[str, object]] = []
    for t in ctx.trace:
        entry: dict[str, object] = {"stage": t.stage}
        if not t.on:
            entry["on"] = False
        if t.ms is not None:
            entry["ms"] = t.ms
        if t.found is not None:
            entry["found"] = t.found
        if t.changed:
            entry["changed"] = [move(m) for m in t.changed]
        if t.dropped:
            entry["dropped"] = [move(m) for m in t.dropped]
        out.append(entry)
    return out


def envelope(
    notes: Notes,
    p: EmbeddingProvider | None,
    results: list[SearchResult],
    mode: str,
    fallback: str | None,
) -> SearchResponse:
    if notes.fallback:  # the rerank stage's
        fallback = f"{fallback}; {notes.fallback}" if fallback else notes.fallback
    out: SearchResponse = {
        "results": results,
        "provider": p.id if p else None,
        "model": p.model if p else None,
        "mode": mode,
        "fallback": fallback,
    }
    if notes.relevance is not None:
        out["relevance"] = notes.relevance
    if notes.abstained:
        out["abstained"] = notes.abstained
    if notes.explain is not None:
        rerank = {} if notes.rerank is None else {"rerank": notes.rerank}
        out["explain"] = notes.explain | rerank
    return out
