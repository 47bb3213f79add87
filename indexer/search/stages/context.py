"""What one search request knows, for its stages to read: the request, the settings,
the index's facts and snapshot, the query as understood (words, time windows), the
chunk rows read so far, each hit's best line (``view``), and what the stages noted.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from indexer.api import MAX_RESULTS, SearchRequest
from indexer.search.candidates import Candidate, ChunkRows, Notes
from indexer.search.query.parse import ParsedQuery, parse_query
from indexer.search.query.when import TIME_FILLER, asked
from indexer.search.snippets import has_word_with_prefix, make_snippet
from indexer.search.time_scope import TimeScope
from indexer.sources.curated import strip_annotations
from indexer.store import SearchRow

if TYPE_CHECKING:
    from indexer.config import Config
    from indexer.search.facts import IndexFacts
    from indexer.search.snapshot.live import LiveIndex
    from indexer.store import IndexStore
    from providers.base import EmbeddingProvider

__all__ = [
    "DEPTH",
    "POOL_QUESTIONS",
    "WINDOW_DAYS",
    "WINDOW_DEPTH",
    "Move",
    "RunContext",
    "Span",
    "Trace",
    "View",
]

# Candidates per side and source: hybrid.candidateMultiplier x POOL_QUESTIONS (40
# by default), or x maxResults if that is more. The rules that look below the first
# results (dedup, supersession, source balance) look DEPTH hits deep (or
# maxResults). Neither depends on maxResults up to POOL_QUESTIONS, so the first
# results are the same for any maxResults up to it.
POOL_QUESTIONS = 10
DEPTH = 30
# A topic within a time with an edge of at most WINDOW_DAYS days ("what came up at
# standup two days ago"): hybrid's candidate lists go WINDOW_DEPTH times deeper, so
# the window's match is among the candidates when the topic's words are common
# elsewhere (``stages.time``).
WINDOW_DAYS = 31
WINDOW_DEPTH = 4


@dataclass(frozen=True)
class View:
    """A hit's chunk as results show it: the snippet and the lines it spans (the
    file's, 1-based), the line it is centred on and that line's text."""

    row: SearchRow
    snippet: str
    first: int
    last: int
    best: int
    best_text: str


@dataclass
class Span:
    """A result's lines after dedup: its chunk's, grown by the chunks merged into it,
    and the other source's citations of the same memory (``also``)."""

    start: int
    end: int
    also: list[dict[str, object]] = field(default_factory=list)


@dataclass
class Move:
    """A hit a stage moved, added (``start`` None) or dropped (``to`` None)."""

    id: int
    to: int | None = None  # 1-based place after the stage
    score: float | None = None
    start: int | None = None  # 1-based place before it
    before: float | None = None  # the score before it
    why: object = None  # the part the stage gave it


@dataclass
class Trace:
    """What one stage did to a search (``explain``): off, how many hits it found
    (retrieval), or what it changed among the first places."""

    stage: str
    on: bool = True
    ms: float | None = None
    found: int | None = None
    changed: list[Move] = field(default_factory=list)
    dropped: list[Move] = field(default_factory=list)


class RunContext:
    """One ``memory_search`` request, as its stages see it."""

    def __init__(
        self,
        cfg: Config,
        store: IndexStore,
        provider: EmbeddingProvider | None,
        live: LiveIndex | None,
        req: SearchRequest,
        facts: IndexFacts,
    ) -> None:
        self.cfg, self.store, self.provider, self.live = cfg, store, provider, live
        self.req, self.facts = req, facts
        qc = cfg.query
        self.today, self.tz, self.when = asked(
            req.query, req.as_of, req.time_zone or qc.timeZone, read=qc.dateBoost > 0
        )
        self.text = self.when.rest if self.when.windows else req.query  # what is searched
        self.q: ParsedQuery = parse_query(self.text)
        self.limit = min(req.max_results or qc.maxResults, MAX_RESULTS)
        self.floor = qc.minScore if req.min_score is None else req.min_score
        self.wanted = list(req.sources) if req.sources else None
        self.chars = qc.maxSnippetChars
        self.rows = ChunkRows(store)
        self.scope = TimeScope(store, self.when, self.tz, self.wanted)
        if self.when.windows and not self.only_time():
            # With a topic, a window memory holds no day of is words, not a time
            # ("where did she move from 4 years ago"); "recently" always means newer.
            held = tuple(w for w in self.when.windows if w.soft or self.scope.holds_any(w))
            if held != self.when.windows:
                self.when = self.scope.when = self.when.keeping(held)
                self.text = self.when.rest if held else req.query
                self.q = parse_query(self.text)
        self.listing = bool(self.when.windows) and self.only_time()
        self.pool = cfg.hybrid.candidateMultiplier * max(self.limit, POOL_QUESTIONS)
        self.depth = max(self.limit, DEPTH)
        self.notes = Notes()
        h = cfg.hybrid
        self.weight = h.vectorWeight / ((h.vectorWeight + h.textWeight) or 1.0)  # fusion's
        self.share: float | None = None  # the query's words the best keyword hits hold
        self.scale: float | None = None  # fusion: its value x this = the score
        # "keyword", "hybrid" or "vector", and why not hybrid (the retrieval may fall
        # back to keyword when the query cannot be embedded)
        self.mode, self.fallback = self._mode()
        self.deeper = (
            WINDOW_DEPTH if self.mode == "hybrid" and self.short_hard_window(WINDOW_DAYS) else 1
        )
        self.embedding: tuple[Future[Any], float]  # the query's vector, when asked (vector)
        # the vector side, for fusion: (chunk id, cosine) best first, and their sources
        self.near: list[tuple[int, float]] = []
        self.near_sources: dict[int, str] = {}
        self.dated: set[int] = set()  # the window's chunks shown for their time alone
        self.spans: dict[int, Span] = {}  # dedup: the results' lines and other citations
        self.stopped: str | None = None  # a stage answered: nothing more is searched
        self.trace: list[Trace] = []  # explain: what each stage did
        self._views: dict[int, View | None] = {}
        self._held: dict[int, int] = {}
        overrides = dict(req.stages)
        self.switches = {name: overrides.get(name, on) for name, on in vars_of(qc.stages).items()}

    # -- what the query is ----------------------------------------------------------

    def _mode(self) -> tuple[str, str | None]:
        req, facts = self.req, self.facts
        if self.listing or req.mode == "keyword":
            return "keyword", None
        if facts.vectors:
            return ("vector" if req.mode == "vector" else "hybrid"), None
        if self.provider is not None:
            return "keyword", (  # the daemon embeds on its own: status says what stops it
                "vectors are not built yet ('memindex status' says why; without a daemon "
                "'memindex index' builds them): keyword search only"
            )
        return "keyword", f"{facts.no_vectors}: keyword search only"

    def only_time(self) -> bool:
        """The query holds a time and nothing else to search ("what did I do
        yesterday?")."""
        q = self.q
        if not self.when.windows or q.exact or q.required or q.cjk:
            return False
        return q.filler or all(t in TIME_FILLER for t in q.terms)

    def short_hard_window(self, listed_days: int) -> bool:
        """A time with an edge ("yesterday", "last week"; not "recently") of at most
        ``listed_days`` days."""
        w = self.when
        return bool(w.windows) and not any(x.soft for x in w.windows) and w.days() <= listed_days

    def parts(self) -> list[list[str] | None]:
        """Both sources asked for and both present: each is searched on its own, so
        the larger transcript corpus cannot push memory chunks out of the
        candidates."""
        if self.facts.both_sources:
            return [["memory"], ["sessions"]]
        return [self.wanted]

    def on(self, name: str) -> bool:
        """Whether the stage ``name`` is switched on (config, then the request)."""
        return self.switches.get(name, True)

    # -- what a hit shows -----------------------------------------------------------

    def view(self, h: Candidate) -> View | None:
        """``h``'s snippet and best line (worked out once per search); None when its
        chunk is gone. Its row must have been read (``rows.need``)."""
        if h.id in self._views:
            return self._views[h.id]
        row = self.rows.get(h.id)
        v = None
        if row is not None:
            annotated = row.source == "memory" and "<!--" in row.text
            text = strip_annotations(row.text) if annotated else row.text  # same lines
            snippet, s0, s1, best = make_snippet(text, 0, self.q, self.chars)
            lines = row.text.split("\n")
            best_text = lines[best] if 0 <= best < len(lines) else ""
            # text lines -> the file's (a transcript chunk skips noise lines)
            v = View(
                row, snippet, row.file_line(s0), row.file_line(s1), row.file_line(best), best_text
            )
        self._views[h.id] = v
        return v

    def held(self, h: Candidate) -> int:
        """How many of the query's words (and CJK pairs) ``h``'s chunk holds (a word
        counts where a word of the chunk starts with its stem); 0 when it is gone.
        Its row must have been read (``rows.need``)."""
        n = self._held.get(h.id)
        if n is None:
            row = self.rows.get(h.id)
            low = "" if row is None else row.text.lower()
            n = sum(1 for p in self.q.stems if has_word_with_prefix(low, p))
            n += sum(1 for g in self.q.cjk if g in low)
            self._held[h.id] = n
        return n

    def stop(self, why: str) -> None:
        """End the search here with no results, saying ``why`` (``abstained``)."""
        self.stopped = why


def vars_of(section: object) -> dict[str, bool]:
    """A ``[query.stages]`` section as {name: on}."""
    return {f.name: bool(getattr(section, f.name)) for f in fields(section)}  # type: ignore[arg-type]
