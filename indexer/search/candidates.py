"""What flows through a search: immutable ``Candidate`` records, the chunk rows one
search reads (``ChunkRows``), and what the stages noted for the answer (``Notes``).

A candidate is a chunk id with its scores. Every stage of the pipeline
(``search/pipeline.py``) takes the list of candidates and returns a new one; nothing
is changed in place. ``score`` is the one number a candidate is ranked by and shows:
the pipeline keeps every list sorted by it. What a stage contributed (a factor, a
move and why) goes in ``parts`` under the stage's name, for ``explain``.

Text and paths live in ``ChunkRows``: read from the store only for the candidates a
stage has to look at, in one query per batch, and never twice in one search. A
chunk deleted since its candidate was found has no row and is dropped where its
row is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from indexer.store import SearchRow
from indexer.store.base import FilesAndChunks

__all__ = ["Candidate", "ChunkRows", "Notes", "own_relevance"]

_NO_PARTS: Mapping[str, object] = MappingProxyType({})


@dataclass(frozen=True, slots=True, eq=False)  # compared by identity (it is cheap)
class Candidate:
    """One chunk as a search ranks it. ``score`` orders the results and is the
    result's ``score``; the relevance of each side of the match stays beside it
    (``text_score``, ``vector_score``)."""

    id: int
    source: str
    rank: float  # BM25 (store/bm25.py): negative, lower is better; 0.0: no keyword hit
    score: float
    text_score: float = 0.0  # the keyword side's relevance, r / (1 + r) of the BM25
    exact: bool = False  # holds an exact token or phrase of the query
    full: bool = False  # holds every word of the query
    classified: bool = True  # False: exact/full not worked out (not needed so far)
    vector_score: float | None = None  # the cosine
    vector_relevance: float | None = None  # the cosine on the one scale (calibration)
    parts: Mapping[str, object] = field(default_factory=lambda: _NO_PARTS)  # stage name -> its part

    def with_part(self, stage: str, value: object, **changes: object) -> Candidate:
        """This candidate with ``stage``'s part ``value`` (and the fields ``changes``)."""
        return replace(self, parts={**self.parts, stage: value}, **changes)  # type: ignore[arg-type]


def own_relevance(c: Candidate) -> float:
    """How well ``c`` matches on its own, whatever ranks it: the stronger of its
    keyword score and its (calibrated) cosine."""
    cos = c.vector_relevance if c.vector_relevance is not None else c.vector_score
    return max(c.text_score, cos or 0.0)


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
