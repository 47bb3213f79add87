"""The PostgreSQL store: one connection to one agent's generation (``PgStore``).

The same operations as the SQLite ``Store`` (``IndexStore``), on the tables of
``pg_schema``; keyword search and vectors are in ``pg_search``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from indexer.errors import StoreError
from indexer.store.pg_connect import (
    GEN_TABLES,
    PgTarget,
    connect,
    gen_of,
    lock_key,
    redact,
    writer_label,
)
from indexer.store.pg_search import PgSearch
from indexer.store.records import ChunkChanges, ChunkRow, FileState, NewChunk, SearchRow
from indexer.store.records import SessionCursor as Cursor

if TYPE_CHECKING:
    from indexer.store.interface import IndexStore

__all__ = ["PgStore"]


class PgStore(PgSearch):
    def __init__(self, target: PgTarget, gen: int, *, readonly: bool, lock: bool) -> None:
        self.target = target
        self.agent = target.agent
        self.gen = gen
        self.readonly = readonly
        self.generation = target.generation_name(gen)
        url = target.read_url if readonly else target.url
        self.url = url
        self._ctx = connect(url, target.pool_size)
        self.db = self._ctx.__enter__()
        self._locked = False
        self.vector_error: str | None = None
        try:
            with self._errors():
                row = self.db.execute(
                    "SELECT extversion FROM pg_extension WHERE extname='vector'"
                ).fetchone()
                if lock:
                    self._lock_writer()
        except StoreError:
            self.close()
            raise
        self.vec_version: str | None = str(row[0]) if row else None
        if self.vec_version is None:
            self.vector_error = "pgvector is not installed in the database"

    def _lock_writer(self) -> None:
        key = lock_key("writer", self.agent)
        row = self.db.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()
        if not (row and row[0]):
            holder = self.db.execute(
                "SELECT writer FROM agents WHERE agent=%s", (self.agent,)
            ).fetchone()
            who = f" ({holder[0]})" if holder and holder[0] else ""
            raise StoreError(
                f"agent {self.agent} in {redact(self.url)} already has a writer{who}: one "
                "daemon writes each agent; give this one another agentId"
            )
        self._locked = True
        self.db.execute("UPDATE agents SET writer=%s WHERE agent=%s", (writer_label(), self.agent))

    def close(self) -> None:
        if self.db is None:
            return
        with contextlib.suppress(Exception):
            if self.db.info.transaction_status != 0:  # not idle: roll back
                self.db.rollback()
            if self._locked:
                key = lock_key("writer", self.agent)
                self.db.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))
        self._ctx.__exit__(None, None, None)
        self.db = None

    def __enter__(self) -> PgStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reopen(self) -> IndexStore:
        return PgStore(self.target, self.gen, readonly=True, lock=False)

    # -- transactions and meta -------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with self._errors(), self.db.transaction():
            yield

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        with self._errors(), self.db.transaction(force_rollback=True):
            if self.db.info.transaction_status == 2:  # the outermost: one snapshot
                self.db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        with self.db.transaction():
            yield

    @contextlib.contextmanager
    def batch(self) -> Iterator[Callable[[], None]]:
        def checkpoint() -> None:
            self.db.execute("COMMIT")
            self.db.execute("BEGIN")

        with self._errors():
            self.db.execute("BEGIN")
            try:
                yield checkpoint
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def meta_get(self, key: str) -> str | None:
        row = self._q("SELECT value FROM meta WHERE {k} AND key=%s", key).fetchone()
        return None if row is None else str(row[0])

    def meta_set(self, key: str, value: str) -> None:
        self._q(
            "INSERT INTO meta(agent, gen, key, value) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (agent, gen, key) DO UPDATE SET value=excluded.value",
            key,
            value,
        )

    def change_versions(self) -> tuple[str | None, str | None, str | None]:
        got = dict(
            self._q(
                "SELECT key, value FROM meta WHERE {k} "
                "AND key IN ('chunksVersion', 'vectorsVersion', 'vectorKey')"
            ).fetchall()
        )
        return got.get("chunksVersion"), got.get("vectorsVersion"), got.get("vectorKey")

    def _bump_chunks(self) -> None:
        self.meta_set("chunksVersion", f"{time.time_ns()}")

    def _bump_vectors(self) -> None:
        self.meta_set("vectorsVersion", f"{time.time_ns()}")

    # -- files and chunks ------------------------------------------------------------

    def file_states(self, source: str | None = None) -> dict[str, FileState]:
        sql = "SELECT path, hash, mtime_ns, size FROM files WHERE {k}"
        rows = self._q(sql + " AND source=%s", source) if source else self._q(sql)
        return {str(p): FileState(str(h), int(m), int(s)) for p, h, m, s in rows}

    def file_lines(self, path: str) -> int | None:
        row = self._q("SELECT lines FROM files WHERE {k} AND path=%s", path).fetchone()
        return None if row is None else int(row[0])

    def touch_file(self, path: str, mtime_ns: int, size: int) -> None:
        self._q("UPDATE files SET mtime_ns=%s, size=%s WHERE {k} AND path=%s", path,
                before=(mtime_ns, size))  # fmt: skip

    def delete_file(self, path: str) -> int:
        ids = [int(r[0]) for r in self._q("SELECT id FROM chunks WHERE {k} AND path=%s", path)]
        self._delete_chunks(ids)
        self._q("DELETE FROM files WHERE {k} AND path=%s", path)
        return len(ids)

    def _delete_chunks(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        self._bump_chunks()
        self._q("DELETE FROM postings WHERE {k} AND id = ANY(%s)", list(ids))
        if self._q("DELETE FROM chunk_vectors WHERE {k} AND id = ANY(%s)", list(ids)).rowcount:
            self._bump_vectors()
        self._q("DELETE FROM chunks WHERE {k} AND id = ANY(%s)", list(ids))

    def _insert_chunks(self, path: str, source: str, chunks: Iterable[ChunkRow]) -> int:
        """Insert chunks under new ids from the database's sequence (ids only grow)."""
        rows = list(chunks)
        if not rows:
            return 0
        self._bump_chunks()
        ids = [
            int(r[0])
            for r in self.db.execute(
                "SELECT nextval('chunk_ids') FROM generate_series(1, %s)", (len(rows),)
            )
        ]
        postings: list[tuple[Any, ...]] = []
        chunk_rows = []
        for cid, c in zip(ids, rows, strict=True):
            dl = 0
            for col, text in enumerate((c.fts_body, c.heading, path, source)):
                dl += self._postings(cid, col, text, postings)
            chunk_rows.append(
                (self.agent, self.gen, cid, path, source, c.start_line, c.end_line,
                 c.heading, c.hash, c.text, dl)
            )  # fmt: skip
        with self.db.cursor() as cur:
            cur.executemany(
                "INSERT INTO chunks(agent, gen, id, path, source, start_line, end_line, "
                "heading, hash, text, dl) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                chunk_rows,
            )
            self._put_postings(cur, postings)
        return len(rows)

    def append_chunks(
        self, path: str, source: str, state: FileState, lines: int, chunks: Iterable[ChunkRow]
    ) -> int:
        self._q(
            "INSERT INTO files(agent, gen, path, source, hash, mtime_ns, size, lines, indexed_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (agent, gen, path) DO UPDATE "
            "SET hash=excluded.hash, mtime_ns=excluded.mtime_ns, size=excluded.size, "
            "lines=excluded.lines, indexed_at=excluded.indexed_at",
            path, source, state.hash, state.mtime_ns, state.size, lines, time.time(),
        )  # fmt: skip
        return self._insert_chunks(path, source, chunks)

    def replace_file(
        self, path: str, source: str, state: FileState, lines: int, chunks: Iterable[ChunkRow]
    ) -> tuple[int, int]:
        removed = self.delete_file(path)
        return removed, self.append_chunks(path, source, state, lines, chunks)

    def rename_path(self, old: str, new: str, prepare: Callable[[str], str]) -> None:
        ids = [int(r[0]) for r in self._q("SELECT id FROM chunks WHERE {k} AND path=%s", old)]
        self._q("UPDATE chunks SET path=%s WHERE {k} AND path=%s", old, before=(new,))
        self._bump_chunks()
        postings: list[tuple[Any, ...]] = []
        for cid in ids:
            self._postings(cid, 2, new, postings)
        self._q("DELETE FROM postings WHERE {k} AND col=2 AND id = ANY(%s)", ids)
        with self.db.cursor() as cur:
            self._put_postings(cur, postings)
        # a path's length changes the row's length: recount from the new postings
        self._q(
            "UPDATE chunks c SET dl = (SELECT coalesce(sum(cardinality(p.positions)), 0) "
            "FROM postings p WHERE p.agent=c.agent AND p.gen=c.gen AND p.id=c.id) "
            "WHERE c.agent=%s AND c.gen=%s AND c.id = ANY(%s)",
            ids,
        )  # fmt: skip
        for table in ("files", "session_cursors"):
            self._q(f"UPDATE {table} SET path=%s WHERE {{k}} AND path=%s", old, before=(new,))

    def clear(self) -> None:
        self._bump_chunks()
        if self.has_vectors():  # as SQLite drops its vector table
            self._q("DELETE FROM chunk_vectors WHERE {k}")
            self._q("DELETE FROM meta WHERE {k} AND key='vectorDims'")
            self._bump_vectors()
        for table in ("postings", "chunks", "files", "skipped", "session_cursors"):
            self._q(f"DELETE FROM {table} WHERE {{k}}")

    def has_source(self, source: str) -> bool:
        row = self._q("SELECT EXISTS(SELECT 1 FROM files WHERE {k} AND source=%s)", source)
        return bool(row.fetchone()[0])

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, SearchRow]:
        rows = self._q(
            "SELECT id, path, source, start_line, end_line, heading, text FROM chunks "
            "WHERE {k} AND id = ANY(%s)",
            list(ids),
        )
        return {
            int(i): SearchRow(int(i), str(p), str(s), int(a), int(b), str(h), str(t), 0.0)
            for i, p, s, a, b, h, t in rows
        }

    def texts_for_hashes(self, hashes: Sequence[str]) -> dict[str, str]:
        rows = self._q("SELECT hash, text FROM chunks WHERE {k} AND hash = ANY(%s)", list(hashes))
        return {str(h): str(t) for h, t in rows}

    # -- the change feed -------------------------------------------------------------

    def change_seq(self) -> int:
        row = self._q("SELECT coalesce(max(seq), 0) FROM chunk_changes WHERE {k}").fetchone()
        seq = int(row[0]) if row else 0
        return max(seq, int(self.meta_get("changesPrunedTo") or 0))

    def changes_since(self, after: int) -> ChunkChanges | None:
        if after < int(self.meta_get("changesPrunedTo") or 0):
            return None
        kinds: tuple[list[int], list[int], list[int]] = ([], [], [])
        seq = after
        for s, cid, kind in self._q(
            "SELECT seq, chunk, kind FROM chunk_changes WHERE {k} AND seq > %s ORDER BY seq", after
        ):
            seq = int(s)
            if 0 <= kind <= 2:
                kinds[kind].append(int(cid))
        return ChunkChanges(max(seq, self.change_seq()), *kinds)

    def prune_changes(self, keep: int) -> int:
        high = self.change_seq() - keep
        if high <= int(self.meta_get("changesPrunedTo") or 0):
            return 0
        with self.transaction():
            n = self._q("DELETE FROM chunk_changes WHERE {k} AND seq <= %s", high).rowcount
            self.meta_set("changesPrunedTo", str(high))
        return int(n)

    def new_chunks(self, after_id: int, also: Sequence[int] = ()) -> list[NewChunk]:
        rows = self._q(
            "SELECT id, source, path, heading, text FROM chunks WHERE {k} "
            "AND (id > %s OR id = ANY(%s)) ORDER BY id",
            after_id,
            list(also),
        )
        return [NewChunk(int(i), str(s), str(p), str(h), str(t)) for i, s, p, h, t in rows]

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for table, key in (("files", "files"), ("chunks", "chunks")):
            for source, n in self._q(f"SELECT source, count(*) FROM {table} WHERE {{k}} "
                                     "GROUP BY source"):  # fmt: skip
                out.setdefault(str(source), {"files": 0, "chunks": 0})[key] = int(n)
        return out

    # -- transcript cursors and skipped files ----------------------------------------

    def session_cursors(self) -> dict[str, Cursor]:
        return {
            str(p): Cursor(str(p), int(d), int(i), int(c), int(n), str(h), int(hl), int(m))
            for p, d, i, c, n, h, hl, m in self._q(
                "SELECT path, dev, ino, committed, lines, head, head_len, malformed "
                "FROM session_cursors WHERE {k}"
            )
        }

    def put_session_cursor(self, c: Cursor) -> None:
        self._q(
            "INSERT INTO session_cursors(agent, gen, path, dev, ino, committed, lines, "
            "updated_at, head, head_len, malformed) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s, %s) ON CONFLICT (agent, gen, path) DO UPDATE SET dev=excluded.dev, "
            "ino=excluded.ino, committed=excluded.committed, lines=excluded.lines, "
            "updated_at=excluded.updated_at, head=excluded.head, head_len=excluded.head_len, "
            "malformed=excluded.malformed",
            c.path, c.dev, c.ino, c.committed, c.lines, time.time(), c.head, c.head_len,
            c.malformed,
        )  # fmt: skip

    def delete_session(self, path: str) -> int:
        self._q("DELETE FROM session_cursors WHERE {k} AND path=%s", path)
        return self.delete_file(path)

    def record_skip(self, path: str, source: str, reason: str) -> None:
        self._q(
            "INSERT INTO skipped(agent, gen, path, source, reason, at) VALUES "
            "(%s, %s, %s, %s, %s, %s) ON CONFLICT (agent, gen, path) DO UPDATE "
            "SET reason=excluded.reason, at=excluded.at",
            path, source, reason, time.time(),
        )  # fmt: skip

    def clear_skip(self, path: str) -> None:
        self._q("DELETE FROM skipped WHERE {k} AND path=%s", path)

    def prune_skips(self, keep: set[str], source: str) -> None:
        for (p,) in self._q("SELECT path FROM skipped WHERE {k} AND source=%s", source).fetchall():
            if p not in keep:
                self.clear_skip(str(p))

    def sync_skips(self, source: str, items: Sequence[tuple[str, str]]) -> None:
        rows = self._q("SELECT path, reason FROM skipped WHERE {k} AND source=%s", source)
        if {str(p): str(r) for p, r in rows} == dict(items):
            return
        with self.transaction():
            self._q("DELETE FROM skipped WHERE {k} AND source=%s", source)
            for path, reason in items:
                self.record_skip(path, source, reason)

    def skipped(self) -> list[dict[str, Any]]:
        return [
            {"path": p, "source": s, "reason": r, "at": a}
            for p, s, r, a in self._q(
                "SELECT path, source, reason, at FROM skipped WHERE {k} ORDER BY path"
            )
        ]

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

    def upkeep(self) -> None:
        """Build the agent's HNSW index once it has enough vectors."""
        self._maybe_hnsw()

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
             "postings p WHERE p.agent=c.agent AND p.gen=c.gen AND p.id=c.id)"),
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
