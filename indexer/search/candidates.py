"""What flows through a search: immutable ``Candidate`` records, the chunk rows one
search reads (``ChunkRows``), and what the stages noted for the answer (``Notes``).

A candidate is a chunk id with its scores. Every stage (keyword retrieval, fusion
with vector neighbours, the floor, decay, source balance, MMR) takes a sequence of
candidates and returns a new one; nothing is changed in place. Text and paths live in
``ChunkRows``: read from the store only for the candidates a stage has to look at (to
find an exact token below the floor, break a tie, decay by date, compare words for
MMR, render), in one query per batch, and never twice in one search. A chunk deleted
since its candidate was found has no row and is dropped where its row is needed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from indexer.store import SearchRow
from indexer.store.base import FilesAndChunks

__all__ = ["Candidate", "ChunkRows", "Notes"]


@dataclass(frozen=True, slots=True, eq=False)  # compared by identity (it is cheap)
class Candidate:
    """One chunk as a search ranks it. ``score`` orders the results; ``shown`` (when
    set) is the result's ``score`` field, the number ``minScore`` judges: in keyword
    mode the two are the same, in hybrid mode ``score`` is the fused rank key and
    ``shown`` the chunk's own relevance (see ``fusion.fuse``)."""

    id: int
    source: str
    rank: float  # BM25 (store/bm25.py): negative, lower is better; 0.0: no keyword hit
    score: float
    text_score: float = 0.0
    exact: bool = False
    full: bool = False
    classified: bool = True  # False: exact/full not worked out (not needed so far)
    vector_score: float | None = None  # the cosine
    vector_relevance: float | None = None  # the cosine on the one scale (calibration)
    shown: float | None = None
    fused: bool = False  # ranked by fuse(): the result also carries fusedScore
    # The parts of ``score``, for ``explain`` (None: that stage did not run):
    text_scaled: float | None = None  # weighted fusion: BM25 over the query's best
    vector_scaled: float | None = None  # weighted fusion: cosine min-max scaled
    ranks: tuple[int | None, int | None] | None = None  # rank fusion: keyword, vector
    decay: float | None = None  # temporal decay's factor
    dated: float | None = None  # the factor for a daily log dated as the query asks
    first_mention: bool = False  # moved up as the first note of the ID asked about
    decision: bool = False  # moved up as the decision about what the question asks
    window_first: bool = False  # in the named time with a word of the query: ranked first
    signal: float | None = None  # a memory entry's importance x project factor
    rerank: float | None = None  # the reranker's relevance, 0..1
    before_rerank: float | None = None  # ``score`` before the rerank blend


class ChunkRows:
    """The chunk rows of one search, each read from the store at most once."""

    def __init__(self, store: FilesAndChunks, known: Iterable[SearchRow] = ()) -> None:
        self._store = store
        self._rows: dict[int, SearchRow] = {r.id: r for r in known}
        self._gone: set[int] = set()
        self.reads = 0  # store reads made (tests: rows are read once, in batches)

    def add(self, rows: Iterable[SearchRow]) -> None:
        """Rows already read (FTS5 returns them with its candidates)."""
        for r in rows:
            self._rows.setdefault(r.id, r)

    def need(self, ids: Iterable[int]) -> None:
        """Read the rows of ``ids`` not read yet, in one query."""
        todo = [i for i in dict.fromkeys(ids) if i not in self._rows and i not in self._gone]
        if not todo:
            return
        self.reads += 1
        found = self._store.chunk_rows(todo)
        self._rows.update(found)
        self._gone.update(i for i in todo if i not in found)

    def get(self, cid: int) -> SearchRow | None:
        """The row of ``cid`` if it was read (``need``) and the chunk exists."""
        return self._rows.get(cid)

    def has(self, cid: int) -> bool:
        return cid in self._rows

    def place(self, cid: int) -> tuple[str, int]:
        """Where ``cid``'s chunk is, (path, start line), if its row was read; ("", 0)
        else. Orders equal scores the same in every build of the same files (chunk
        ids differ between builds)."""
        row = self._rows.get(cid)
        return ("", 0) if row is None else (row.path, row.start_line)


@dataclass
class Notes:
    """What a run's stages noted for its answer."""

    fallback: str | None = None  # the rerank stage's fallback
    rerank: dict[str, object] | None = None  # explain: the rerank stage's figures
    explain: dict[str, object] | None = None  # explain: the settings that ranked it
    relevance: float | None = None  # abstain / explain: the query's relevance signal
    abstained: str | None = None  # abstain: why nothing is returned
