"""Keyword search on PostgreSQL (vectors are ``vectors``).

Keyword search ranks as SQLite's ``mi_bm25`` does (bm25.py): BM25 with k1 1.2, b
0.75, Lucene's IDF, the same column weights, a phrase's frequency summed over its
hits per column, the row length over all columns and the average over all rows.
The tokens are FTS5's own (``tokens.Tokenizer``, made when a chunk is written), so a
query matches the same chunks with the same scores on both stores. A query of words
is one round trip (the rows holding them, found by the GIN index of ``chunk_terms``'
term hashes, with each word's frequency in each, their lengths, and whether the corpus figures
still hold); a quoted phrase's tokens are matched on positions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from indexer.store import bm25
from indexer.store.postgres.connection import PgBase
from indexer.store.postgres.tables import body_positions
from indexer.store.records import FTS_WEIGHTS, KeywordPostings, KeywordQuery, SearchRow
from indexer.store.tokens import shared_tokenizer

__all__ = ["PgSearch"]


class PgSearch(PgBase):
    # -- keyword search ----------------------------------------------------------------

    def fts_search(
        self,
        query: KeywordQuery,
        limit: int,
        sources: Sequence[str] | None = None,
        weights: tuple[float, float, float] = FTS_WEIGHTS,
        *,
        fts5_idf: bool = False,
    ) -> list[SearchRow]:
        tok = shared_tokenizer()
        phrases = [tuple(tok.document(" ".join(p))) for p in query.phrases()]
        required = len(query.required)
        if not any(phrases) or any(not p for p in phrases[:required]):
            return []
        w = (*weights, 0.0)
        ids_db: Any
        dl_db: Any
        if all(len(p) == 1 for p in phrases):  # words: one round trip for it all
            held, (ids_db, dl_db), version = self._words_and_lengths(
                [p[0] for p in phrases], w, sources
            )
        else:
            held = [self._phrase_rows(p, w) for p in phrases]  # (ids, weighted tf) each
            ids_db = dl_db = version = None
        cand = _candidates(held, required)
        if not len(cand):
            return []
        n_rows, avgdl = self._corpus_stats(version)
        if ids_db is None:
            ids_db, dl_db = self._lengths(cand, sources)
        at_db = np.asarray(ids_db, dtype=np.int64)
        keep = np.isin(at_db, cand, assume_unique=True)  # the rows of the candidates
        cand = at_db[keep]
        dl = np.asarray(dl_db, dtype=np.float64)[keep]
        parts = []
        for ids, tf in held:
            full = np.zeros(len(cand), dtype=np.float64)
            at = np.searchsorted(cand, ids)
            ok = at < len(cand)
            ok[ok] = cand[at[ok]] == ids[ok]
            full[at[ok]] = tf[ok]
            parts.append((_idf(int(n_rows), len(ids), fts5_idf), full))
        rank = -bm25.score_rows(parts, dl, avgdl)
        order = np.lexsort((cand, rank))[:limit]  # by rank, then by id
        top = [(float(rank[i]), int(cand[i])) for i in order]
        got = self.chunk_rows([cid for _, cid in top])
        out = []
        for score, cid in top:
            r = got.get(cid)
            if r is not None:
                out.append(dataclasses.replace(r, rank=score))
        return out

    def _lengths(self, cand: npt.NDArray[np.int64], sources: Sequence[str] | None) -> Any:
        """The ids and lengths of the rows in ``cand`` (of ``sources``), in id order."""
        sql = (
            "SELECT coalesce(array_agg(id ORDER BY id), '{}'), "
            "coalesce(array_agg(dl ORDER BY id), '{}') FROM chunks WHERE {k} "
            "AND id = ANY(%s)"
        )
        args: list[Any] = [cand.tolist()]
        if sources:
            sql += " AND source = ANY(%s)"
            args.append(list(sources))
        return self._q(sql, *args, binary=True).fetchone()

    def _words_and_lengths(
        self, words: Sequence[str], w: tuple[float, ...], sources: Sequence[str] | None
    ) -> tuple[
        list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]],
        tuple[list[int], list[float]],
        str | None,
    ]:
        """In one query: for each word, the rows holding it (sorted ids) and its
        weighted frequency in each; the length of every such row (of ``sources``);
        and the generation's chunksVersion (whether the BM25 figures still hold).
        The rows are looked up by an array of ids (``= ANY``), never a join the
        planner could take for a nested loop over every chunk on stale statistics."""
        src = " AND c.source = ANY(%s)" if sources else ""
        freqs, args = self._freqs_sql(words, w)
        rows = self._q(
            f"WITH {freqs} "
            "SELECT term, array_agg(id ORDER BY id), array_agg(tf ORDER BY id), NULL::text "
            "FROM p GROUP BY term UNION ALL "
            "SELECT NULL, coalesce(array_agg(c.id ORDER BY c.id), '{}'), "
            "coalesce(array_agg(c.dl::float8 ORDER BY c.id), '{}'), (SELECT value FROM meta "
            "WHERE agent=%s AND gen=%s AND key='chunksVersion') FROM chunks c "
            "WHERE c.agent=%s AND c.gen=%s AND c.id = ANY(ARRAY(SELECT DISTINCT id FROM p))" + src,
            *(self.agent, self.gen, self.agent, self.gen),
            *([list(sources)] if sources else []),
            before=args,
            keyed=False,
            binary=True,
        ).fetchall()
        by_word: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}
        lengths: tuple[list[int], list[float]] = ([], [])
        version = None
        for term, ids, vals, ver in rows:
            if term is None:
                lengths, version = (ids, vals), ver
            else:
                by_word[term] = (np.asarray(ids, dtype=np.int64), np.asarray(vals, np.float64))
        none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        held = [by_word.get(word, none) for word in words]
        return held, lengths, version

    def _freqs_sql(self, words: Sequence[str], w: tuple[float, ...]) -> tuple[str, list[Any]]:
        """The CTEs ending in ``p(term, id, tf)``: each word's rows and its frequency
        in each, weighted by column (``w``); each word's rows come from the GIN
        index on the terms' hashes, so a row's count is looked up only for the words
        it holds (over the rows holding any of them, a search of three words took
        23.5 ms instead of 16.0: ``bench/pg_roundtrips.py --no-snapshot``). With its
        parameters."""
        sql = (
            "q AS (SELECT w, memindex_term_hash(%s::text, %s::bigint, w) AS h "
            "FROM unnest(%s::text[]) w), "
            "p AS MATERIALIZED (SELECT q.w AS term, c.id, %s::float8 * c.n "
            "+ %s::float8 * cardinality(array_positions(c.heading, q.w)) "
            "+ %s::float8 * cardinality(array_positions(c.path, q.w)) "
            "+ %s::float8 * cardinality(array_positions(c.source, q.w)) AS tf "
            "FROM q CROSS JOIN LATERAL (SELECT id, heading, path, source, "
            "body[array_position(hashes, q.h)] AS n FROM chunk_terms WHERE agent=%s "
            "AND gen=%s AND hashes @> ARRAY[q.h]) c)"
        )
        args = [self.agent, self.gen, list(dict.fromkeys(words)), *w[:4], self.agent, self.gen]
        return sql, args

    def _phrase_rows(
        self, phrase: Sequence[str], w: tuple[float, ...]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The rows holding ``phrase`` (sorted ids) and its weighted frequency in each
        (column weights ``w``): summed in the database for one token, from positions
        for several (tokens at consecutive positions)."""
        if not phrase:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if len(phrase) == 1:
            freqs, args = self._freqs_sql(phrase, w)
            row = self._q(
                f"WITH {freqs} SELECT coalesce(array_agg(id ORDER BY id), '{{}}'), "
                "coalesce(array_agg(tf ORDER BY id), '{}') FROM p",
                before=args, keyed=False, binary=True,
            ).fetchone()  # fmt: skip
            return np.asarray(row[0], dtype=np.int64), np.asarray(row[1], dtype=np.float64)
        want = set(phrase)
        found: dict[str, dict[int, dict[int, list[int]]]] = {}
        for cid, terms, counts, pos, *cols in self._q(
            "SELECT id, terms, body, pos, heading, path, source FROM chunk_terms "
            "WHERE {k} AND hashes @> ARRAY(SELECT memindex_term_hash(%s::text, %s::bigint, t) "
            "FROM unnest(%s::text[]) t)",
            self.agent, self.gen, list(want), binary=True,
        ):  # fmt: skip
            cid = int(cid)
            for t, at in body_positions(terms, counts, pos):
                if t in want:
                    found.setdefault(t, {}).setdefault(cid, {})[0] = list(at)
            for col, toks in enumerate(cols, start=1):
                for p, t in enumerate(toks):
                    if t in want:
                        found.setdefault(t, {}).setdefault(cid, {}).setdefault(col, []).append(p)
        hits = _phrase_hits(phrase, found)
        ids = sorted(hits)
        tf = [sum(w[c] * n for c, n in hits[cid].items()) for cid in ids]
        return np.asarray(ids, dtype=np.int64), np.asarray(tf, dtype=np.float64)

    def _corpus_stats(self, version: str | None = None) -> tuple[int, float]:
        """(rows, average row length) of the generation: BM25's corpus figures, read
        again only when its chunks change (not a scan of every row per search).
        ``version``: the chunksVersion, if the caller has read it."""
        if version is None:
            version = self.meta_get("chunksVersion")
        cached = self._stats
        if cached is None or cached[0] != version or version is None:
            n_rows, total = self._q(
                "SELECT count(*), coalesce(sum(dl), 0) FROM chunks WHERE {k}"
            ).fetchone()
            avgdl = ((int(total) / int(n_rows)) if n_rows else 1.0) or 1.0
            cached = self._stats = (version, int(n_rows), avgdl)
        return cached[1], cached[2]

    @contextlib.contextmanager
    def keyword_postings(self, min_chunks: int = 0) -> Iterator[KeywordPostings | None]:
        with self.read_snapshot():
            version = self.meta_get("chunksVersion")
            seq = self.change_seq()
            chunks = [
                (int(i), str(s))
                for i, s in self._q("SELECT id, source FROM chunks WHERE {k} ORDER BY id")
            ]
            if not chunks or len(chunks) < min_chunks:
                yield None
                return
            cur = self.db.cursor(name="memindex_postings", binary=True)
            cur.itersize = 2000
            cur.execute(
                "SELECT id, terms, body, heading, path, source FROM chunk_terms "
                "WHERE agent=%s AND gen=%s",
                (self.agent, self.gen),
            )
            rows = ((int(i), t, b, h, p, s) for i, t, b, h, p, s in cur)
            try:
                yield KeywordPostings(version, seq, chunks, iter(()), by_chunk=rows)
            finally:
                cur.close()


def _candidates(
    held: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]], required: int
) -> npt.NDArray[np.int64]:
    """The rows a search ranks (sorted ids): those holding every one of the first
    ``required`` phrases, else those holding any."""
    if required:
        cand = held[0][0]
        for ids, _ in held[1:required]:
            cand = np.intersect1d(cand, ids, assume_unique=True)
        return cand
    return np.unique(np.concatenate([ids for ids, _ in held]))


def _idf(rows: int, hits: int, fts5: bool) -> float:
    if fts5:
        return max(1e-6, math.log((rows - hits + 0.5) / (hits + 0.5)))
    return bm25.idf(rows, hits)


def _phrase_hits(
    phrase: Sequence[str], found: dict[str, dict[int, dict[int, list[int]]]]
) -> dict[int, dict[int, int]]:
    """{chunk id: {column: occurrences of the phrase}} (tokens at consecutive positions)."""
    first = found.get(phrase[0], {})
    rest = [found.get(t, {}) for t in phrase[1:]]
    out: dict[int, dict[int, int]] = {}
    for cid, cols in first.items():
        if not all(cid in r for r in rest):
            continue
        for col, starts in cols.items():
            later = [set(r[cid].get(col, ())) for r in rest]
            n = sum(1 for p in starts if all(p + j + 1 in s for j, s in enumerate(later)))
            if n:
                out.setdefault(cid, {})[col] = n
    return out
