"""The PostgreSQL store: one connection to one agent's generation (``PgStore``).

The same operations as the SQLite ``Store`` (``IndexStore``) on the tables of
``schema``, in parts: ``connection`` (connection, transactions, meta),
``tables`` (files, chunks, the change feed, cursors, skips), ``search``
(keyword search and vectors), ``cache`` (the shared embedding cache, batch jobs);
here, what joins them: upkeep and the health checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexer.store.file_sync import FileSync
from indexer.store.postgres.cache import PgCache
from indexer.store.postgres.connect import GEN_TABLES, gen_of
from indexer.store.postgres.search import PgSearch
from indexer.store.postgres.tables import PgTables
from indexer.store.postgres.vectors import PgVectors

if TYPE_CHECKING:
    from indexer.store.base import IndexStore

__all__ = ["PgStore"]


_ANALYZE_AFTER = 1_000  # chunks written by this store before its tables are analyzed


class PgStore(PgTables, PgSearch, PgVectors, PgCache, FileSync):
    def reopen(self) -> IndexStore:
        return PgStore(self.target, self.gen, readonly=True)

    # -- upkeep and health -----------------------------------------------------------

    def copy_carryover(self, other: str) -> int:
        """The batch jobs of another generation of this agent (the embedding cache is
        shared by every agent already)."""
        gen = gen_of(other)
        self._q(
            "INSERT INTO batch_jobs(agent, gen, id, provider, hashes, created_at, polled_at) "
            "SELECT agent, %s, id, provider, hashes, created_at, polled_at FROM batch_jobs "
            "WHERE agent=%s AND gen=%s ON CONFLICT DO NOTHING",
            self.gen, self.agent, gen, keyed=False, before=(),
        )  # fmt: skip
        return self.cache_count()

    def checkpoint(self) -> None:
        """Nothing to fold: PostgreSQL's WAL is the server's business."""

    def upkeep(self, changes_kept: int) -> None:
        """Prune the change feed; refresh the planner's statistics after a large
        write; build the agent's HNSW index once it has enough vectors."""
        self.prune_changes(changes_kept)
        self._maybe_analyze()
        self._maybe_hnsw()

    def _maybe_analyze(self) -> None:
        """ANALYZE chunks and chunk_terms once this writer has added ``_ANALYZE_AFTER``
        rows since it last did: a just-filled table still has the statistics of an
        empty one until autovacuum comes by (a minute or more), and on those the
        planner reads an agent's rows in a nested loop over all of them (a 3,500-chunk
        agent's keyword query: 600 ms instead of 20). Then again each time it has added
        as many as before (1,000, 2,000, 4,000...): statistics at most half stale,
        and a fleet's writers do not each analyze the shared table every 1,000 rows.
        The GIN's pending list is merged every ``_ANALYZE_AFTER`` rows: every keyword
        search reads it in full until then, and the merge is work that must be done
        anyway (left to autovacuum, it lands on later searches)."""
        if self.readonly or self._rows_written < _ANALYZE_AFTER:
            return
        if self.db.info.transaction_status != 0:
            return
        with self._errors():
            if self._rows_total >= 2 * self._rows_analyzed:  # as many again since
                self.db.execute("ANALYZE chunks")
                self.db.execute("ANALYZE chunk_terms")  # (its ids only: arrays have none)
                self._rows_analyzed = self._rows_total
            # only the index's owner may
            self.db.execute(
                "SELECT gin_clean_pending_list(oid) FROM pg_class WHERE "
                "oid = 'chunk_terms_hashes'::regclass AND pg_has_role(relowner, 'USAGE')"
            )
        self._rows_written = 0

    def integrity(self) -> str:
        return "ok"

    def consistency(self) -> list[str]:
        checks = [
            ("chunks of no indexed file or transcript",
             "SELECT count(*) FROM chunks c WHERE {k} AND NOT EXISTS (SELECT 1 FROM files f "
             "WHERE f.agent=c.agent AND f.gen=c.gen AND f.path=c.path) AND NOT EXISTS "
             "(SELECT 1 FROM session_cursors s WHERE s.agent=c.agent AND s.gen=c.gen "
             "AND s.path=c.path)"),
            ("duplicate chunks (same path and lines)",
             "SELECT count(*) FROM (SELECT 1 FROM chunks WHERE {k} "
             "GROUP BY path, start_line, end_line HAVING count(*) > 1) d"),
            ("chunks without keyword rows",
             "SELECT count(*) FROM chunks c WHERE {k} AND dl > 0 AND NOT EXISTS (SELECT 1 FROM "
             "chunk_terms p WHERE p.agent=c.agent AND p.gen=c.gen AND p.id=c.id)"),
            ("vectors without a chunk",
             "SELECT count(*) FROM chunk_vectors v WHERE {k} AND NOT EXISTS (SELECT 1 FROM "
             "chunks c WHERE c.agent=v.agent AND c.gen=v.gen AND c.id=v.id)"),
            ("chunks marked embedded without a vector",
             "SELECT count(*) FROM chunks c WHERE {k} AND embedded AND NOT EXISTS (SELECT 1 "
             "FROM chunk_vectors v WHERE v.agent=c.agent AND v.gen=c.gen AND v.id=c.id)"),
        ]  # fmt: skip
        problems = []
        for what, sql in checks:
            row = self._q(sql).fetchone()
            if row and int(row[0]):
                problems.append(f"{int(row[0])} {what}")
        return problems

    def size_bytes(self) -> int:
        """The size of memindex's tables with their indexes, shared by every agent in
        the database (one agent's share would take a scan of every row: too slow
        for ``status``)."""
        row = self._q(
            "SELECT coalesce(sum(pg_total_relation_size(t::regclass)), 0) "
            "FROM unnest(%s::text[]) t",
            list(GEN_TABLES),
            keyed=False,
        ).fetchone()
        return int(row[0]) if row else 0


def _conforms(store: PgStore) -> IndexStore:
    return store  # mypy checks here that PgStore implements the whole protocol
