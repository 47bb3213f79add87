"""``dedup``: one result per place.

A hit whose best line is already shown by a better hit's snippet in the same file
(overlapping chunks matching in their shared lines) is merged into that result: the
line range (and citation) grows to cover both chunks, and no snippet is repeated.
When both sources are searched, a hit whose best line is held by a better result
from the other source is the same memory (a daily-log line and the transcript line
it was written from): it is merged into that result as an ``also`` citation instead
of taking a place of its own. Two chunks hold the same memory when ``SAME_SHARE`` of
the matched line's ``SHINGLE``-word runs occur in the other chunk (a daily-log line
and its transcript line differ in their prefixes, "- [D1:3] 13:56 **Caroline**:"
against "User (Caroline):", not in their words; lines of fewer words are not
compared).

The first ``depth`` places are made this way (the rules after it look that deep);
the hits below them follow as they are. Nothing moves, so no score changes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate
from indexer.search.stages.base import Stage
from indexer.search.stages.context import Span, View

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext

__all__ = ["SAME_SHARE", "SHINGLE", "Dedup", "citation"]

SHINGLE = 5
SAME_SHARE = 0.6
_WORD = re.compile(r"\w+")


def citation(path: str, start: int, end: int) -> str:
    return f"{path}#L{start}" + (f"-L{end}" if end != start else "")


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


class Dedup(Stage):
    name = "dedup"
    listing = True

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        merge_sources = ctx.facts.both_sources
        out: list[Candidate] = []
        shown: dict[str, list[tuple[Span, View]]] = {}
        other: list[tuple[Candidate, View]] = []  # shown, for the other source's twins
        runs: dict[int, set[tuple[str, ...]]] = {}
        n = 0
        for n, h in enumerate(hits):
            if len(out) >= ctx.depth:
                return out + hits[n:]
            if not ctx.rows.has(h.id):  # the next ones too: one read, not one each
                ctx.rows.need([x.id for x in hits[n : n + ctx.depth]])
            view = ctx.view(h)
            if view is None:
                continue  # the chunk is gone
            row = view.row
            same = next(
                (s for s, v in shown.get(row.path, []) if v.first <= view.best <= v.last), None
            )
            if same is not None:
                if row.start_line <= same.end + 1 and same.start <= row.end_line + 1:
                    same.start = min(same.start, row.start_line)
                    same.end = max(same.end, row.end_line)
                continue
            if merge_sources and (twin := self._same_memory(ctx, view, other, runs)) is not None:
                ctx.spans[twin.id].also.append(
                    {
                        "path": row.path,
                        "startLine": row.start_line,
                        "endLine": row.end_line,
                        "source": row.source,
                        "citation": citation(row.path, row.start_line, row.end_line),
                    }
                )
                continue
            span = Span(row.start_line, row.end_line)
            ctx.spans[h.id] = span
            shown.setdefault(row.path, []).append((span, view))
            if merge_sources:
                other.append((h, view))
            out.append(h)
        return out

    @staticmethod
    def _same_memory(
        ctx: RunContext,
        view: View,
        shown: list[tuple[Candidate, View]],
        runs: dict[int, set[tuple[str, ...]]],
    ) -> Candidate | None:
        """The shown hit from the other source whose chunk holds ``view``'s best line."""
        line = _shingles(view.best_text)
        if not line:
            return None
        need = SAME_SHARE * len(line)
        for o, oview in shown:
            if oview.row.source == view.row.source:
                continue
            if o.id not in runs:
                runs[o.id] = _shingles(oview.row.text)
            if len(line & runs[o.id]) >= need:
                return o
        return None
