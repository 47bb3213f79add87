"""In-memory BM25 for long-running processes, exact to the FTS5 path's ranking.

FTS5 ranks an OR query by calling the ranking function on every matching row, so a
common word costs a call per chunk that holds it. The daemon therefore keeps the
FTS5 index's postings in memory (``KeywordPart``, one per snapshot: live.py) and
scores a plain-words query with numpy, with the same formula as
``Store.fts_search`` (bm25.py: k1 1.2, b 0.75, its column weights, Lucene's IDF,
document length over all columns); docs/lab/retrieval-log.md, "Latency at 100k chunks".

The postings live in segments, as in Lucene: a first one read from FTS5 itself
(through ``fts5vocab``, so its tokens are FTS5's porter/unicode61 ones), then one
small segment per batch of changes, made by tokenizing the new chunks' columns
with FTS5's own tokenizer; deleted chunks are marked dead in their segment.
Segments of similar size are merged (so there are about log2(n) of them), and
merging drops the dead rows. Term statistics (rows, average length, how many rows
hold a term) are summed over the live rows of every segment at query time, so a
snapshot updated in place ranks exactly as one read afresh, and as FTS5 does.

A query with phrases, exact tokens or CJK, or a word FTS5 splits in two, goes to
FTS5 (or PostgreSQL's postings), as does every query while the snapshot is behind.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from indexer.search.query.parse import ParsedQuery
from indexer.search.snapshot.keyword_segments import (
    KeywordSegment,
    Occurrences,
    build_segment,
    merge_segments,
)
from indexer.search.snapshot.segments import kill_rows, settle, with_codes
from indexer.sources.text import index_text
from indexer.store import FTS_WEIGHTS, KeywordPostings, NewChunk, bm25
from indexer.store.records import ChunkTokens
from indexer.store.tokens import Tokenizer

__all__ = ["MIN_CHUNKS", "KeywordPart"]

# The daemon answers from memory from an index's first chunk: under concurrent load
# a keyword query through FTS5 (its BM25 counts a term's rows with a Python call per
# row) cost 6 times the CPU (bench/fleet_bench.py: 191 against 1,259 queries/s on two
# cores), and a PostgreSQL one reads every posting of its words.
MIN_CHUNKS = 1
_K1, _B = bm25.K1, bm25.B
_COLUMNS = ("body", "heading", "path", "source")
_CACHED_ROWS = 4_000_000  # BM25 parts kept per snapshot (48 MB)
_BY_CHUNK_BATCH = 50_000  # chunks per segment when built from tokens kept by chunk
_WEIGHT = dict(zip(_COLUMNS, (*FTS_WEIGHTS, 0.0), strict=True))

Hits = list[tuple[int, float, str]]  # (chunk id, FTS5-style rank: negative, source)
Scored = tuple[int, npt.NDArray[np.int32], npt.NDArray[np.float64]]  # segment, rows, BM25


@dataclass(frozen=True)
class KeywordPart:
    """The keyword half of a snapshot: segments and the statistics of their live rows.
    Immutable: ``apply`` returns a new part sharing what did not change."""

    segments: tuple[KeywordSegment, ...]
    codes: dict[str, int]  # source -> code (grows; never reassigned)
    seq: int  # the change feed position it is current to
    max_id: int  # the highest chunk id it has seen: every higher one is new
    live: int  # live rows
    tokens: float  # tokens in the live rows (the average length's numerator)
    # term -> its live rows' BM25 parts per segment: fixed for this part's life (its
    # statistics do not change), so worked out once per term and kept.
    _terms: dict[str, list[Scored]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _cached: list[int] = field(default_factory=lambda: [0], init=False, compare=False, repr=False)

    @classmethod
    def build(cls, got: KeywordPostings) -> KeywordPart | None:
        """From the FTS index's postings (``Store.keyword_postings``)."""
        if got.by_chunk is not None:
            return cls._build_by_chunk(got, got.by_chunk)
        n = len(got.chunks)
        ids = np.fromiter((c[0] for c in got.chunks), dtype=np.int64, count=n)
        codes: dict[str, int] = {}
        src = np.fromiter(
            (codes.setdefault(c[1], len(codes)) for c in got.chunks), dtype=np.int8, count=n
        )
        terms: dict[str, int] = {}

        def batches() -> Iterator[Occurrences]:
            """The vocabulary's (term, column, chunk ids) rows, about a million
            occurrences at a time (memory stays bounded on large indexes)."""
            got_t: list[npt.NDArray[np.int64]] = []
            got_r: list[npt.NDArray[np.int64]] = []
            got_w: list[npt.NDArray[np.float64]] = []
            size = 0
            for term, col, docs in got.terms:  # grouped by term
                t = terms.get(term)
                if t is None:
                    if size >= 1_000_000:
                        yield np.concatenate(got_t), np.concatenate(got_r), np.concatenate(got_w)
                        got_t, got_r, got_w, size = [], [], [], 0
                    t = terms[term] = len(terms)
                rows = np.searchsorted(ids, docs)
                got_t.append(np.full(rows.shape[0], t, dtype=np.int64))
                got_r.append(rows)
                got_w.append(np.full(rows.shape[0], _WEIGHT.get(col, 0.0)))
                size += rows.shape[0]
            if got_t:
                yield np.concatenate(got_t), np.concatenate(got_r), np.concatenate(got_w)

        seg = build_segment(ids, src, terms, batches())
        if n == 0 or seg.dl.sum() == 0:
            return None
        return cls((seg,), codes, got.seq, int(ids.max()), n, float(seg.dl.sum()))

    @classmethod
    def _build_by_chunk(
        cls, got: KeywordPostings, rows: Iterator[ChunkTokens]
    ) -> KeywordPart | None:
        """From the chunks' tokens: a segment per ``_BY_CHUNK_BATCH`` chunks, merged
        as they come (memory stays bounded, as with postings read term by term)."""
        source_of = dict(got.chunks)
        codes: dict[str, int] = {}
        segments: list[KeywordSegment] = []
        batch: list[ChunkTokens] = []
        for row in rows:
            if row[0] in source_of:  # (every chunk has its row; a stray one is skipped)
                batch.append(row)
            if len(batch) >= _BY_CHUNK_BATCH:
                segments = settle([*segments, _from_tokens(batch, source_of, codes)],
                                  merge_segments)  # fmt: skip
                batch = []
        if batch:
            segments = settle([*segments, _from_tokens(batch, source_of, codes)], merge_segments)
        live = sum(seg.live for seg in segments)
        total = float(sum(float(seg.dl.sum()) for seg in segments))
        if not live or total == 0:
            return None
        max_id = max(int(seg.ids.max()) for seg in segments)
        return cls(tuple(segments), codes, got.seq, max_id, live, total)

    def apply(
        self, seq: int, dead: Sequence[int], new: Sequence[NewChunk], tokens: Tokenizer
    ) -> KeywordPart:
        """This part with ``dead`` chunks gone and ``new`` ones added (a chunk in both
        was re-indexed: moved to another path)."""
        live, total = self.live, self.tokens
        segments = []
        for seg in self.segments:
            got = kill_rows(seg, dead)
            if got is not None:
                seg, rows = got
                live -= rows.shape[0]
                total -= float(seg.dl[rows].sum())
            segments.append(seg)
        codes = self.codes
        if new:
            codes = with_codes(codes, [c.source for c in new])
            seg = _from_chunks(new, codes, tokens)
            segments.append(seg)
            live += seg.ids.shape[0]
            total += float(seg.dl.sum())
        max_id = max([self.max_id, *(c.id for c in new)])
        merged = settle(segments, merge_segments)
        return replace(
            self,
            segments=tuple(merged),
            codes=codes,
            seq=seq,
            max_id=max_id,
            live=live,
            tokens=total,
        )

    def _scored(self, term: str) -> list[Scored]:
        """(segment, live rows holding ``term``, their BM25 part) per segment."""
        got = self._terms.get(term)
        if got is not None:
            return got
        df = 0
        found = []
        for s, seg in enumerate(self.segments):
            post = seg.posting(term)
            if post is not None:
                rows, f = post
                if seg.dead:
                    keep = seg.alive[rows]
                    rows, f = rows[keep], f[keep]
                df += rows.shape[0]
                found.append((s, rows, f))
            z = seg.zero.get(term)
            if z is not None:
                df += int(seg.alive[z].sum()) if seg.dead else z.shape[0]
        got = []
        if found:
            idf = bm25.idf(self.live, df)
            avgdl = self.tokens / self.live or 1.0
            for s, rows, f in found:
                norm = _K1 * (1.0 - _B + _B * self.segments[s].dl[rows] / avgdl)
                got.append((s, rows, idf * (f * (_K1 + 1.0) / (f + norm))))
        size = sum(rows.shape[0] for _, rows, _ in got)
        if self._cached[0] + size > _CACHED_ROWS:  # bounded memory: start again
            self._terms.clear()
            self._cached[0] = 0
        self._terms[term] = got
        self._cached[0] += size
        return got

    def search(
        self, tokens: Tokenizer, q: ParsedQuery, limit: int, parts: Sequence[Sequence[str] | None]
    ) -> list[Hits] | None:
        """Top ``limit`` hits of each part (a list of sources, or None for all) for a
        plain-words query, scoring it once; None when FTS5 has to answer it."""
        if q.required or q.exact_parts or q.cjk or not q.terms:
            return None
        words = []
        for word in q.terms:
            toks = tokens.word(word)
            if len(toks) != 1:
                return None  # FTS5 would make it a phrase: let FTS5 answer
            words.append(toks[0])
        if self.live <= 0:
            return [[] for _ in parts]
        # Per segment, each term's live rows and their BM25 part.
        per_seg: list[list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]]] = [
            [] for _ in self.segments
        ]
        for term in words:
            for s, rows, weight in self._scored(term):
                per_seg[s].append((rows, weight))
        names = {code: name for name, code in self.codes.items()}
        out: list[Hits] = []
        for sources in parts:
            wanted = {self.codes[s] for s in sources if s in self.codes} if sources else None
            best: list[tuple[float, int, int]] = []  # (score, chunk id, source code)
            for seg, posts in zip(self.segments, per_seg, strict=True):
                if posts:
                    best += _top(seg, posts, limit, wanted)
            best.sort(key=lambda h: (-h[0], h[1]))
            out.append([(cid, -score, names[code]) for score, cid, code in best[:limit]])
        return out


def _from_chunks(
    chunks: Sequence[NewChunk], codes: dict[str, int], tokens: Tokenizer
) -> KeywordSegment:
    """A segment of chunks tokenized as FTS5 indexes them (``Store._insert_chunks``:
    body = ``index_text(text)``, heading, path, source)."""
    n = len(chunks)
    ids = np.fromiter((c.id for c in chunks), dtype=np.int64, count=n)
    src = np.fromiter((codes[c.source] for c in chunks), dtype=np.int8, count=n)
    toks: list[str] = []
    rows: list[int] = []
    weights: list[float] = []
    for row, c in enumerate(chunks):
        for col, value in zip(
            _COLUMNS, (index_text(c.text), c.heading, c.path, c.source), strict=True
        ):
            got = tokens.document(value)
            toks += got
            rows += [row] * len(got)
            weights += [_WEIGHT[col]] * len(got)
    terms = {t: i for i, t in enumerate(dict.fromkeys(toks))}
    occ = (
        np.fromiter(map(terms.__getitem__, toks), dtype=np.int64, count=len(toks)),
        np.asarray(rows, dtype=np.int64),
        np.asarray(weights, dtype=np.float64),
    )
    return build_segment(ids, src, terms, [occ])


def _from_tokens(
    rows: Sequence[ChunkTokens], source_of: dict[int, str], codes: dict[str, int]
) -> KeywordSegment:
    """A segment of chunks from the tokens a store keeps by chunk (``ChunkTokens``),
    as ``_from_chunks`` makes one from their text; ``codes`` grows with new sources."""
    n = len(rows)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
    src = np.fromiter(
        (codes.setdefault(source_of[r[0]], len(codes)) for r in rows),
        dtype=np.int8,
        count=n,
    )
    flat: list[str] = []  # every row's entries: its terms, then the other columns' tokens
    counts: list[int] = []  # occurrences of each entry (a body term: 0 or more)
    weight: list[float] = []
    per_row: list[int] = []
    w_body, w_head, w_path, w_source = (_WEIGHT[c] for c in _COLUMNS)
    for _, terms, body, heading, path, source in rows:
        flat += terms
        flat += heading
        flat += path
        flat += source
        counts += body
        counts += [1] * (len(heading) + len(path) + len(source))
        weight += [w_body] * len(terms)
        weight += [w_head] * len(heading)
        weight += [w_path] * len(path)
        weight += [w_source] * len(source)
        per_row.append(len(terms) + len(heading) + len(path) + len(source))
    vocab = {t: i for i, t in enumerate(dict.fromkeys(flat))}
    term_of = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    row_of = np.repeat(np.arange(n, dtype=np.int64), per_row)
    k = np.asarray(counts, dtype=np.int64)
    occ = (np.repeat(term_of, k), np.repeat(row_of, k), np.repeat(np.asarray(weight), k))
    return build_segment(ids, src, vocab, [occ])


def _top(
    seg: KeywordSegment,
    posts: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]],
    limit: int,
    wanted: set[int] | None,
) -> list[tuple[float, int, int]]:
    """The best ``limit`` rows of one segment (of the ``wanted`` source codes)."""
    if len(posts) == 1:
        cand, got = posts[0]
    else:  # every row's terms summed, in query order (as FTS5 sums them)
        scores = np.zeros(seg.ids.shape[0], dtype=np.float64)
        scores[posts[0][0]] = posts[0][1]
        for rows, weight in posts[1:]:
            np.add.at(scores, rows, weight)  # rows repeat: += would count each once
        cand = np.concatenate([r for r, _ in posts])
        got = scores[cand]
    if wanted is not None and wanted != set(seg.spans):
        mine = np.isin(seg.src[cand], list(wanted))
        cand, got = cand[mine], got[mine]
    room = limit * len(posts)  # enough to hold ``limit`` distinct rows
    if cand.shape[0] > room:
        # every row scoring at least the room-th best (rows tied with it too: the
        # store breaks ties by the lower chunk id, and so must this)
        floor = np.partition(got, cand.shape[0] - room)[cand.shape[0] - room]
        keep = got >= floor
        cand, got = cand[keep], got[keep]
    if len(posts) > 1:
        cand, first = np.unique(cand, return_index=True)
        got = got[first]
    order = np.lexsort((seg.ids[cand], -got))[:limit]  # by score, then chunk id
    rows = cand[order]
    return list(
        zip(got[order].tolist(), seg.ids[rows].tolist(), seg.src[rows].tolist(), strict=True)
    )
