"""Keyword search, vectors, the shared embedding cache and batch jobs on PostgreSQL.

Keyword search ranks as SQLite's ``mi_bm25`` does (bm25.py): BM25 with k1 1.2, b
0.75, Lucene's IDF, the same column weights, a phrase's frequency summed over its
hits per column, the row length over all columns and the average over all rows.
The tokens are FTS5's own (``tokens.Tokenizer``, made when a chunk is written), so a
query matches the same chunks with the same scores on both stores. The postings of
the query's tokens are read in one query and phrases are matched on positions.

Vectors: an exact cosine scan over the agent's rows while it has fewer than
``HNSW_MIN`` of them (a scan of that many 384-d vectors takes a few milliseconds and
is exact); above, the writer builds an HNSW index for the agent (a partial
expression index on its rows and dimension, built CONCURRENTLY so other agents'
writers are not blocked), and searches use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from indexer.errors import StoreError
from indexer.store import bm25
from indexer.store.postgres.connection import PgBase
from indexer.store.records import FTS_WEIGHTS, KeywordPostings, KeywordQuery, SearchRow
from indexer.store.tokens import shared_tokenizer

__all__ = ["HNSW_MIN", "PgSearch"]

HNSW_MIN = 20_000  # an agent's vectors above which searches use an HNSW index
_COLUMNS = ("body", "heading", "path", "source")


class PgSearch(PgBase):
    _stats: tuple[str | None, int, float] | None = None  # chunksVersion, rows, avgdl

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
        held = [self._phrase_rows(p, w) for p in phrases]  # (ids, weighted tf) each
        if required:
            cand = held[0][0]
            for ids, _ in held[1:required]:
                cand = np.intersect1d(cand, ids, assume_unique=True)
        else:
            cand = np.unique(np.concatenate([ids for ids, _ in held]))
        if not len(cand):
            return []
        n_rows, avgdl = self._corpus_stats()
        sql = (
            "SELECT coalesce(array_agg(id ORDER BY id), '{}'), "
            "coalesce(array_agg(dl ORDER BY id), '{}') FROM chunks WHERE {k} AND id = ANY(%s)"
        )
        args: list[Any] = [cand.tolist()]
        if sources:
            sql += " AND source = ANY(%s)"
            args.append(list(sources))
        ids_db, dl_db = self._q(sql, *args, binary=True).fetchone()
        cand = np.asarray(ids_db, dtype=np.int64)
        dl = np.asarray(dl_db, dtype=np.float64)
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
                out.append(SearchRow(r.id, r.path, r.source, r.start_line, r.end_line,
                                     r.heading, r.text, score, r.lines))  # fmt: skip
        return out

    def _phrase_rows(
        self, phrase: Sequence[str], w: tuple[float, ...]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The rows holding ``phrase`` (sorted ids) and its weighted frequency in each
        (column weights ``w``): summed in the database for one token, from positions
        for several (tokens at consecutive positions)."""
        if not phrase:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if len(phrase) == 1:
            row = self._q(
                "SELECT coalesce(array_agg(id ORDER BY id), '{}'), "
                "coalesce(array_agg(tf ORDER BY id), '{}') FROM (SELECT id, "
                "sum((%s::float8[])[col + 1] * cardinality(positions)) AS tf FROM postings "
                "WHERE {k} AND term = %s GROUP BY id) t",
                phrase[0], before=(list(w),), binary=True,
            ).fetchone()  # fmt: skip
            return np.asarray(row[0], dtype=np.int64), np.asarray(row[1], dtype=np.float64)
        found: dict[str, dict[int, dict[int, list[int]]]] = {}
        for term, cid, col, pos in self._q(
            "SELECT term, id, col, positions FROM postings WHERE {k} AND term = ANY(%s)",
            list(set(phrase)), binary=True,
        ):  # fmt: skip
            found.setdefault(term, {}).setdefault(int(cid), {})[int(col)] = pos
        hits = _phrase_hits(phrase, found)
        ids = sorted(hits)
        tf = [sum(w[c] * n for c, n in hits[cid].items()) for cid in ids]
        return np.asarray(ids, dtype=np.int64), np.asarray(tf, dtype=np.float64)

    def _corpus_stats(self) -> tuple[int, float]:
        """(rows, average row length) of the generation: BM25's corpus figures, read
        again only when its chunks change (not a scan of every row per search)."""
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
            cur = self.db.cursor(name="memindex_postings")
            cur.itersize = 2000
            cur.execute(
                "SELECT term, col, array_agg(id ORDER BY id), "
                "array_agg(cardinality(positions) ORDER BY id) FROM postings "
                'WHERE agent=%s AND gen=%s GROUP BY term, col ORDER BY term COLLATE "C", col',
                (self.agent, self.gen),
            )
            terms = (
                (str(t), _COLUMNS[int(c)], np.repeat(np.asarray(ids, np.int64), counts))
                for t, c, ids, counts in cur
            )
            try:
                yield KeywordPostings(version, seq, chunks, terms)
            finally:
                cur.close()

    # -- vectors -------------------------------------------------------------------------

    def ensure_vector_table(self, dims: int) -> None:
        if self.vec_version is None:
            raise StoreError(self.vector_error or "pgvector is not installed")
        if dims < 1 or dims > 16000:
            raise StoreError(f"invalid vector dimension {dims}")
        self.meta_set("vectorDims", str(int(dims)))

    def put_vectors(self, rows: Iterable[tuple[int, bytes]]) -> None:
        rows = list(rows)
        if not rows:
            return
        self._bump_vectors()
        data = [(self.agent, self.gen, i, len(v) // 4, v, _vector_text(v)) for i, v in rows]
        with self._errors(), self.db.cursor() as cur:
            cur.executemany(
                "INSERT INTO chunk_vectors(agent, gen, id, dims, vec, embedding) "
                "VALUES (%s, %s, %s, %s, %s, %s::vector) ON CONFLICT (agent, gen, id) DO "
                "UPDATE SET dims=excluded.dims, vec=excluded.vec, embedding=excluded.embedding",
                data,
            )
        self._q("UPDATE chunks SET embedded=true WHERE {k} AND id = ANY(%s)", [i for i, _ in rows])

    def drop_vectors(self) -> None:
        self._q("DELETE FROM chunk_vectors WHERE {k}")
        self._q("DELETE FROM meta WHERE {k} AND key='vectorDims'")
        self._bump_vectors()
        self._q("UPDATE chunks SET embedded=false WHERE {k} AND embedded")

    def any_embedded(self) -> bool:
        return bool(
            self._q("SELECT EXISTS(SELECT 1 FROM chunks WHERE {k} AND embedded)").fetchone()[0]
        )

    def pending_chunks(self, limit: int, after: int = 0) -> list[tuple[int, str, str]]:
        rows = self._q(
            "SELECT id, hash, text FROM chunks WHERE {k} AND NOT embedded AND id > %s "
            "ORDER BY id LIMIT %s",
            after,
            limit,
        )
        return [(int(i), str(h), str(t)) for i, h, t in rows]

    def pending_count(self) -> int:
        return int(self._q("SELECT count(*) FROM chunks WHERE {k} AND NOT embedded").fetchone()[0])

    def vectors_for(self, ids: Sequence[int]) -> dict[int, bytes]:
        rows = self._q("SELECT id, vec FROM chunk_vectors WHERE {k} AND id = ANY(%s)", list(ids))
        return {int(i): bytes(v) for i, v in rows}

    def all_vectors(self) -> Iterator[tuple[int, str, str, bytes]]:
        """Every embedded chunk's (id, source, hash, vector), read 5,000 at a time."""
        after = -1
        while True:
            rows = self._q(
                "SELECT c.id, c.source, c.hash, v.vec FROM chunk_vectors v JOIN chunks c ON "
                "c.agent=v.agent AND c.gen=v.gen AND c.id=v.id WHERE v.agent=%s AND v.gen=%s "
                "AND v.id > %s ORDER BY v.id LIMIT 5000",
                after,
            ).fetchall()
            if not rows:
                return
            for i, s, h, v in rows:
                yield int(i), str(s), str(h), bytes(v)
            after = int(rows[-1][0])

    def vector_rows(self, ids: Sequence[int]) -> list[tuple[int, str, bytes]]:
        rows = self._q(
            "SELECT c.id, c.source, v.vec FROM chunks c JOIN chunk_vectors v ON "
            "v.agent=c.agent AND v.gen=c.gen AND v.id=c.id WHERE c.agent=%s AND c.gen=%s "
            "AND c.id = ANY(%s) ORDER BY c.id",
            list(ids),
        )
        return [(int(i), str(s), bytes(v)) for i, s, v in rows]

    def _hnsw_name(self, dims: int) -> str:
        digest = hashlib.sha1(self.agent.encode()).hexdigest()[:12]
        return f"chunk_vectors_hnsw_{digest}_{dims}"

    def hnsw_in_use(self) -> bool:
        dims = self.vector_dims()
        if dims is None:
            return False
        row = self._q(
            "SELECT EXISTS(SELECT 1 FROM pg_indexes i JOIN pg_class c ON c.relname = "
            "i.indexname JOIN pg_index x ON x.indexrelid = c.oid WHERE i.indexname = %s "
            "AND x.indisvalid)",
            self._hnsw_name(dims),
            keyed=False,
        ).fetchone()
        return bool(row and row[0])

    def _maybe_hnsw(self) -> None:
        """Build the agent's HNSW index once it has ``HNSW_MIN`` vectors (writer only,
        between transactions)."""
        dims = self.vector_dims()
        if self.readonly or dims is None or self.db.info.transaction_status != 0:
            return
        if self.hnsw_in_use():
            return
        row = self._q("SELECT count(*) FROM chunk_vectors WHERE agent=%s AND dims=%s",
                      self.agent, dims, keyed=False).fetchone()  # fmt: skip
        if int(row[0]) < HNSW_MIN:
            return
        from psycopg import sql

        name = self._hnsw_name(dims)
        with self._errors():
            self.db.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))
            self.db.execute(
                sql.SQL(
                    "CREATE INDEX CONCURRENTLY {} ON chunk_vectors USING hnsw "
                    "((embedding::vector({})) vector_cosine_ops) WHERE agent = {} AND dims = {}"
                ).format(
                    sql.Identifier(name),
                    sql.Literal(dims),
                    sql.Literal(self.agent),
                    sql.Literal(dims),
                )  # fmt: skip
            )
            self.db.execute("ANALYZE chunk_vectors")  # so the planner knows the agent's rows

    def knn(self, query: bytes, k: int) -> list[tuple[int, float]]:
        dims = self.vector_dims()
        if dims is None or len(query) != dims * 4:
            return []
        text = _vector_text(query)
        if not self.hnsw_in_use():
            return self._knn_exact(text, k)
        from psycopg import sql

        stmt = sql.SQL(
            "SELECT id, embedding::vector({d}) <=> %s::vector({d}) AS dist FROM chunk_vectors "
            "WHERE agent = {a} AND dims = {d} AND gen = %s ORDER BY dist LIMIT %s"
        ).format(d=sql.Literal(dims), a=sql.Literal(self.agent))
        # The index is partial on (agent, dims); the generation is a filter on what it
        # yields (ef_search candidates: while a rebuild's rows share the table, fewer
        # than k may remain, and then the generation is scanned exactly). Sorting is
        # off so the planner never trades the index for the primary key plus a sort of
        # every row (it would, on stale statistics).
        with self._errors(), self.db.transaction():
            self.db.execute("SET LOCAL enable_sort = off")
            self.db.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(
                sql.Literal(min(1000, max(40, 2 * k)))))  # fmt: skip
            rows = self.db.execute(stmt, (text, self.gen, k)).fetchall()
        if len(rows) < k:
            # Short: the other generation's rows took the index's candidates (or this
            # one holds fewer than k vectors, when the scan below is cheap anyway).
            return self._knn_exact(text, k)
        return [(int(i), float(d)) for i, d in rows]

    def _knn_exact(self, text: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest of this generation's vectors by a scan of all of them."""
        rows = self._q(
            "SELECT id, embedding <=> %s::vector AS d FROM chunk_vectors WHERE {k} "
            "ORDER BY d LIMIT %s",
            k,
            before=(text,),
        )
        return [(int(i), float(d)) for i, d in rows]

    def versions(self) -> dict[str, str | None]:
        server = self._q("SHOW server_version", keyed=False).fetchone()
        return {
            "postgresql": str(server[0]) if server else None,
            "pgvector": self.vec_version,
            "hnsw": "in use" if self.hnsw_in_use() else f"no (exact scan below {HNSW_MIN} vectors)",
        }


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


def _vector_text(v: bytes) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.frombuffer(v, dtype="<f4")) + "]"
