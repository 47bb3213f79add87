"""Result objects: the best candidates as located, cited snippets, one per place
(overlapping chunks and the same memory in both sources merged)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from indexer.api import SearchResponse, SearchResult
from indexer.search.candidates import Candidate, ChunkRows, Notes
from indexer.search.keyword_hits import EXACT_BOOST
from indexer.search.query import ParsedQuery
from indexer.search.snippets import make_snippet
from indexer.search.supersede import announces, is_curated_result, supersede
from indexer.sources.curated import meta_of, strip_annotations
from indexer.store import SearchRow
from indexer.store.records import log_date

if TYPE_CHECKING:
    from providers.base import EmbeddingProvider

__all__ = ["envelope", "explain_parts", "render_results", "to_result"]


def _citation(path: str, start: int, end: int) -> str:
    return f"{path}#L{start}" + (f"-L{end}" if end != start else "")


def explain_parts(c: Candidate) -> dict[str, object]:
    """Why candidate ``c`` ranks where it does: each stage's part of its score
    (``explain: true``). Parts a stage did not compute are left out."""
    parts: dict[str, object] = {
        "bm25": round(max(0.0, -c.rank), 4),
        "exact": c.exact,
        "allWords": c.full,
        "exactBoost": 1.0 + EXACT_BOOST if c.exact else 1.0,
        "keywordScore": round(c.text_score, 4),
    }
    if c.vector_score is not None:
        parts["cosine"] = round(c.vector_score, 4)
    if c.vector_relevance is not None and c.vector_relevance != c.vector_score:
        parts["cosineCalibrated"] = round(c.vector_relevance, 4)  # the model's scale mapped
    if c.text_scaled is not None:
        parts["keywordScaled"] = round(c.text_scaled, 4)
    if c.vector_scaled is not None:
        parts["vectorScaled"] = round(c.vector_scaled, 4)
    if c.ranks is not None:
        parts["keywordRank"] = None if c.ranks[0] is None else c.ranks[0] + 1
        parts["vectorRank"] = None if c.ranks[1] is None else c.ranks[1] + 1
    if c.fused:
        fused = c.before_rerank if c.before_rerank is not None else c.score
        parts["fused"] = round(fused / (c.decay or 1.0) / (c.dated or 1.0) / (c.signal or 1.0), 4)
    if c.decay is not None:
        parts["decay"] = round(c.decay, 4)
    if c.dated is not None:
        parts["dateBoost"] = round(c.dated, 4)
    if c.window_first:
        parts["windowFirst"] = True  # in the time the query names, with its words
    if c.decision:
        parts["decision"] = True  # records the decision the question asks about
    if c.first_mention:
        parts["firstMention"] = True  # the ID asked about is first named here
    if c.signal is not None:
        parts["entrySignals"] = round(c.signal, 4)  # importance x project
    if c.rerank is not None:
        parts["rerank"] = round(c.rerank, 4)
    own = c.vector_relevance if c.vector_relevance is not None else c.vector_score
    if c.shown is not None and c.shown > max(c.text_score, own or 0.0):
        parts["keptAtFloor"] = "exact token or phrase" if c.exact else "every query word"
    parts["rankKey"] = round(c.score, 4)
    return parts


def to_result(
    c: Candidate, row: SearchRow, q: ParsedQuery, max_chars: int, explain: bool = False
) -> tuple[SearchResult, int]:
    """The result object of candidate ``c``, whose chunk is ``row``, and the line its
    snippet is centred on; ``explain``: with its score parts."""
    annotated = row.source == "memory" and "<!--" in row.text
    text = strip_annotations(row.text) if annotated else row.text  # same lines, no comments
    snippet, s0, s1, best = make_snippet(text, 0, q, max_chars)
    # Text lines -> the file's lines (a transcript chunk skips malformed and noise lines).
    s0, s1, best = row.file_line(s0), row.file_line(s1), row.file_line(best)
    out: SearchResult = {
        "path": row.path,
        "startLine": row.start_line,
        "endLine": row.end_line,
        "score": round(c.score if c.shown is None else c.shown, 4),
        "snippet": snippet,
        "source": row.source,
        "citation": _citation(row.path, row.start_line, row.end_line),
        "snippetStartLine": s0,
        "snippetEndLine": s1,
        "heading": row.heading,
        "textScore": round(c.text_score, 4),
    }
    if annotated:
        meta = meta_of(row.path, row.text)
        if meta.importance is not None:
            out["importance"] = meta.importance
        if meta.triggers:
            out["triggers"] = meta.triggers
        if meta.project_key:
            out["projectKey"] = meta.project_key
    if c.vector_score is not None:
        out["vectorScore"] = round(c.vector_score, 4)
    if c.fused:
        out["fusedScore"] = round(c.score, 4)
    if explain:
        out["explain"] = explain_parts(c)
    return out, best


# Two chunks from different sources hold the same memory when the line a hit matched
# in one is in the other: ``SAME_SHARE`` of that line's ``SHINGLE``-word runs occur
# in the other chunk. A daily-log line and the transcript line it came from differ
# in their prefixes ("- [D1:3] 13:56 **Caroline**:" against "User (Caroline):"),
# not in their words. Lines of fewer words are not compared (too little to tell).
SHINGLE = 5
SAME_SHARE = 0.6
_WORD = re.compile(r"\w+")


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _line(row: SearchRow, absolute: int) -> str:
    lines = row.text.split("\n")
    i = row.text_line(absolute)
    return lines[i] if 0 <= i < len(lines) else ""


def render_results(
    hits: Sequence[Candidate],
    q: ParsedQuery,
    limit: int,
    max_chars: int,
    rows: ChunkRows,
    *,
    explain: bool = False,
    merge_sources: bool = False,
) -> list[SearchResult]:
    """Result objects for the best ``limit`` candidates, one per location. A hit whose
    best line is already shown by a better hit's snippet in the same file
    (overlapping chunks matching in their shared lines) is merged into that result:
    the line range (and citation) grows to cover both chunks, and no snippet is
    repeated.

    ``merge_sources`` (both sources searched): a hit whose best line is held by a
    better result from the other source is the same memory (a daily-log line and
    the transcript line it was written from): it is merged into that result as an
    ``also`` citation instead of taking a slot of its own.

    Rows not read yet are read ``2 * limit`` at a time as they come up; a candidate
    whose chunk no longer exists is skipped."""
    out: list[SearchResult] = []
    best: list[str] = []  # each shown result's best line (supersession compares them)
    taken: dict[str, list[SearchResult]] = {}
    # Shown results with their chunk's word runs (worked out when first compared).
    other: list[tuple[SearchResult, SearchRow]] = []
    runs: dict[int, set[tuple[str, ...]]] = {}
    n = -1
    for n, h in enumerate(hits):
        if not rows.has(h.id):
            # twice what is shown: merged and vanished hits rarely need a second read
            rows.need([x.id for x in hits[n : n + 2 * limit]])
        row = rows.get(h.id)
        if row is None:
            continue
        r, best_line = to_result(h, row, q, max_chars, explain)
        shown = taken.setdefault(r["path"], [])
        same = next(
            (o for o in shown if o["snippetStartLine"] <= best_line <= o["snippetEndLine"]), None
        )
        if same is not None:
            if r["startLine"] <= same["endLine"] + 1 and same["startLine"] <= r["endLine"] + 1:
                same["startLine"] = min(same["startLine"], r["startLine"])
                same["endLine"] = max(same["endLine"], r["endLine"])
                same["citation"] = _citation(r["path"], same["startLine"], same["endLine"])
            continue
        if merge_sources and (twin := _same_memory(r, row, best_line, other, runs)) is not None:
            twin.setdefault("also", []).append(
                {
                    "path": r["path"],
                    "startLine": r["startLine"],
                    "endLine": r["endLine"],
                    "source": r["source"],
                    "citation": r["citation"],
                }
            )
            continue
        shown.append(r)
        out.append(r)
        best.append(_line(row, best_line))
        if merge_sources:
            other.append((r, row))
        if len(out) >= limit:
            break
    # an ID asked about is first_mention's: its later notes are not announced changes
    asked = None if q.exact else frozenset(q.terms)
    if asked is not None and len(out) >= limit:
        later = _announcing(hits[n + 1 : REACH * limit], out, best, q, max_chars, rows, asked)
        if later is not None:
            out.append(later[0])
            best.append(later[1])
    dates = [log_date(r["path"]) if r["source"] == "memory" else None for r in out]
    return supersede(out, best, dates, asked=asked, explain=explain)[:limit]


# How far past the shown results a later note announcing a change of a shown curated
# entry is looked for: ``REACH`` times the results asked for (the candidates).
REACH = 4


def _announcing(
    rest: Sequence[Candidate],
    out: list[SearchResult],
    best: list[str],
    q: ParsedQuery,
    max_chars: int,
    rows: ChunkRows,
    asked: frozenset[str],
) -> tuple[SearchResult, str] | None:
    """The first candidate ranked below the shown results that is a daily log whose
    best line announces a change of what a shown curated entry states, with that
    line; or None. Without it the results would state the entry and not show the
    newer note (``supersede`` then puts it above the entry)."""
    curated = [b for r, b in zip(out, best, strict=True) if is_curated_result(r)]
    if not curated or not rest:
        return None
    shown = {r["path"] for r in out}
    rows.need([h.id for h in rest])
    for h in rest:
        row = rows.get(h.id)
        if row is None or row.source != "memory" or row.path in shown or not log_date(row.path):
            continue
        r, best_line = to_result(h, row, q, max_chars)
        line = _line(row, best_line)
        if any(announces(line, c, asked) for c in curated):
            return r, line
    return None


def _same_memory(
    r: SearchResult,
    row: SearchRow,
    best_line: int,
    shown: Sequence[tuple[SearchResult, SearchRow]],
    runs: dict[int, set[tuple[str, ...]]],
) -> SearchResult | None:
    """The shown result from another source whose chunk holds ``row``'s best line."""
    line = _shingles(_line(row, best_line))
    if not line:
        return None
    need = SAME_SHARE * len(line)
    for o, orow in shown:
        if o["source"] == r["source"]:
            continue
        if orow.id not in runs:
            runs[orow.id] = _shingles(orow.text)
        if len(line & runs[orow.id]) >= need:
            return o
    return None


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
