"""Vectors on PostgreSQL with pgvector: written and queried in pgvector's binary
format (no text rendering of 384 floats per row), searched by an exact cosine scan
over the agent's rows while it has fewer than ``HNSW_MIN`` of them (a scan of that
many 384-d vectors takes a few milliseconds and is exact); above, the writer builds
an HNSW index for the agent (a partial expression index on its rows and dimension,
built CONCURRENTLY so other agents' writers are not blocked), and searches use it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence

from indexer.errors import StoreError
from indexer.store.postgres.connection import PgBase
from indexer.store.postgres.vector_type import PgVector

__all__ = ["HNSW_MIN", "PgVectors"]

HNSW_MIN = 20_000  # an agent's vectors above which searches use an HNSW index


class PgVectors(PgBase):
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
        data = [(self.agent, self.gen, i, len(v) // 4, v, PgVector(v)) for i, v in rows]
        with self._errors(), self.db.cursor() as cur:
            cur.executemany(
                "INSERT INTO chunk_vectors(agent, gen, id, dims, vec, embedding) "
                "VALUES (%s, %s, %s, %s, %b, %b) ON CONFLICT (agent, gen, id) DO "
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

    def all_vectors(self) -> Iterator[tuple[int, str, str, bytes]]:
        """Every embedded chunk's (id, source, hash, vector), read 5,000 at a time."""
        after = -1
        while True:
            rows = self._q(
                "SELECT c.id, c.source, c.hash, v.vec FROM chunk_vectors v JOIN chunks c ON "
                "c.agent=v.agent AND c.gen=v.gen AND c.id=v.id WHERE v.agent=%s AND v.gen=%s "
                "AND v.id > %s ORDER BY v.id LIMIT 5000",
                after,
                binary=True,
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
            binary=True,
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
        q = PgVector(query)
        if not self.hnsw_in_use():
            return self._knn_exact(q, k)
        from psycopg import sql

        stmt = sql.SQL(
            "SELECT id, embedding::vector({d}) <=> %b::vector({d}) AS dist FROM chunk_vectors "
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
            rows = self.db.execute(stmt, (q, self.gen, k)).fetchall()
        if len(rows) < k:
            # Short: the other generation's rows took the index's candidates (or this
            # one holds fewer than k vectors, when the scan below is cheap anyway).
            return self._knn_exact(q, k)
        return [(int(i), float(d)) for i, d in rows]

    def _knn_exact(self, q: PgVector, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest of this generation's vectors by a scan of all of them."""
        rows = self._q(
            "SELECT id, embedding <=> %b AS d FROM chunk_vectors WHERE {k} ORDER BY d LIMIT %s",
            k,
            before=(q,),
            binary=True,
        )
        return [(int(i), float(d)) for i, d in rows]

    def versions(self) -> dict[str, str | None]:
        server = self._q("SHOW server_version", keyed=False).fetchone()
        return {
            "postgresql": str(server[0]) if server else None,
            "pgvector": self.vec_version,
            "hnsw": "in use" if self.hnsw_in_use() else f"no (exact scan below {HNSW_MIN} vectors)",
        }
