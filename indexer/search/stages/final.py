"""The end of the list.

* ``floor`` (``minScore``): a hit scoring below it is dropped, unless it matches on
  its own (its keyword score or its cosine reaches it: a strong paraphrase or a
  strong keyword hit is not lost to the weighting) or holds an exact token, a phrase
  or every query word; those are kept, after every hit above the floor, scoring
  ``minScore`` (the rank they have).
* ``cut``: the first ``maxResults``.
* ``abstain``: the query's relevance signal (``relevance``): the best line of the
  first three hits by the share of the query's other words it holds, times
  ``OTHER_SPEAKER`` when the query names a speaker of these lines and the line is
  someone else's, capped when every name the question asks about is absent from
  memory (``names.py``); with ``abstain: true`` and the signal below
  ``query.abstainBelow``, no results.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate, ChunkRows, own_relevance
from indexer.search.query.names import ABSENT_NAME_RELEVANCE, all_names_absent
from indexer.search.query.parse import stem_prefix
from indexer.search.snippets import has_word_with_prefix
from indexer.search.stages.base import Stage, classify
from indexer.search.stages.time import WINDOW_SCORE

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext

__all__ = ["OTHER_SPEAKER", "Abstain", "Cut", "Floor", "line_speakers", "relevance"]


class Floor(Stage):
    name = "floor"
    switch = False
    listing = True

    def applies(self, ctx: RunContext) -> bool:
        return ctx.floor > 0

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        floor = ctx.floor
        n = next((i for i, h in enumerate(hits) if h.score < floor), len(hits))
        below = hits[n:]
        if not below:
            return hits
        ctx.rows.need([h.id for h in below if not h.classified])
        kept: list[Candidate] = []
        for h in below:
            why = None
            if own_relevance(h) >= floor:
                why = "its own match reaches minScore"
            else:
                if not h.classified:
                    row = ctx.rows.get(h.id)
                    if row is None:
                        continue
                    exact, full, _ = classify(row, ctx.q)
                    h = replace(h, exact=exact, full=full, classified=True)
                if h.exact or h.full:
                    why = "exact token or phrase" if h.exact else "every query word"
            if why is not None:
                kept.append(h.with_part(self.name, why, score=floor))
        return hits[:n] + kept


class Cut(Stage):
    name = "cut"
    switch = False
    listing = True
    traces_drops = False

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        return hits[: ctx.limit]


class Abstain(Stage):
    name = "abstain"
    switch = False
    listing = True

    def applies(self, ctx: RunContext) -> bool:
        return ctx.req.abstain or ctx.req.explain

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        req, qc = ctx.req, ctx.cfg.query
        if ctx.listing:  # the time is what was asked: all or none
            ctx.notes.relevance = 1.0 if hits else 0.0
            return hits
        signal = round(relevance(list(ctx.q.words), hits, ctx.rows), 4)
        top_rows = [r for h in hits[:3] if (r := ctx.rows.get(h.id)) is not None]
        if any(h.id in ctx.dated for h in hits[:3]):  # the time matches, if not the words
            signal = max(signal, WINDOW_SCORE)
        if signal > ABSENT_NAME_RELEVANCE and all_names_absent(
            ctx.store, req.query, ctx.wanted, [r.text.lower() for r in top_rows]
        ):  # "what did Caroline say" of a memory with no Caroline
            signal = ABSENT_NAME_RELEVANCE
        ctx.notes.relevance = signal
        if req.abstain and signal < qc.abstainBelow:
            ctx.notes.abstained = (
                f"relevance {signal:.2f} is below query.abstainBelow "
                f"{qc.abstainBelow:g}: no result is likely to answer this"
            )
            return []
        return hits


# A line's speaker: "**Name**:" (a daily log: "- [D1:3] 13:56 **Caroline**: ..."),
# "Role (Name):" (a transcript line as memindex writes it: "User (Caroline): ...")
# or, in a transcript only, "Name:" at the start of the line (in a memory file,
# "- Landlord: Mr. Ortiz" is a labelled fact, not something the landlord said).
_SPEAKER = re.compile(
    r"^[\s>*-]*(?:\[[^\]\n]{0,40}\]\s*)?(?:\d{1,2}:\d{2}\s+)?"
    r"(?:\*\*([^*\n]{1,40})\*\*\s*:|[A-Za-z]+ \(([^)\n]{1,40})\):|([A-Z][\w.-]{0,30}):)",
    re.M,
)


def line_speakers(text: str, *, labels: bool = False) -> list[tuple[str | None, str]]:
    """(speaker lower-cased or None, line lower-cased) for each line of ``text``;
    ``labels``: a plain "Word:" at a line's start is a label, not a speaker."""
    out: list[tuple[str | None, str]] = []
    for line in text.split("\n"):
        m = _SPEAKER.match(line)
        who = None
        if m is not None and not (labels and m.group(3)):
            who = next(g for g in m.groups() if g)
        out.append((None if who is None else who.strip().lower(), line.lower()))
    return out


# A line by someone other than the person a query names counts for this much of its
# word coverage: an unanswerable question is usually a real one asked about the
# wrong person (docs/lab/retrieval-log.md, "Abstention").
OTHER_SPEAKER = 0.3


def relevance(
    words: Sequence[str], hits: Sequence[Candidate], rows: ChunkRows, top: int = 3
) -> float:
    """How likely the best ``top`` hits answer a query of ``words`` (lower-cased, in
    order), 0..1: the best line of those chunks by the share of the query's other
    words it holds (a word counts where a word of the line starts with its stem),
    times ``OTHER_SPEAKER`` when the query names a speaker of these lines and the
    line is someone else's. Names are query words that are also speakers here."""
    head = list(hits[:top])
    rows.need([h.id for h in head])
    lines = [
        ls
        for h in head
        if (row := rows.get(h.id))
        for ls in line_speakers(row.text, labels=row.source == "memory")
    ]
    if not lines:
        return 0.0
    speakers = {who for who, _ in lines if who}
    named = {w for w in words if w in speakers}
    stems = list(dict.fromkeys(stem_prefix(w) for w in words if w not in named))
    if not stems:
        return 1.0
    best = 0.0
    for who, low in lines:
        held = sum(1 for s in stems if has_word_with_prefix(low, s))
        share = held / len(stems)
        if named and who not in named:
            share *= OTHER_SPEAKER
        best = max(best, share)
    return best
