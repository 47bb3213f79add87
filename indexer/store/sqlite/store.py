"""The SQLite store: every table, plus keyword search and the health checks."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

import apsw

from indexer.errors import StoreError
from indexer.store import bm25
from indexer.store.base import IndexStore
from indexer.store.file_sync import FileSync
from indexer.store.records import (
    FTS_TOKENIZER,
    FTS_WEIGHTS,
    KeywordPostings,
    KeywordQuery,
    SearchRow,
)
from indexer.store.sqlite.chunks import ChunkTables
from indexer.store.sqlite.export import SqliteExport
from indexer.store.sqlite.generations import ForeignLink, current_file
from indexer.store.sqlite.vec_tables import VectorTables


class Store(ChunkTables, VectorTables, SqliteExport, FileSync):
    """An open index file."""

    def fts_search(
        self,
        query: KeywordQuery,
        limit: int,
        sources: Sequence[str] | None = None,
        weights: tuple[float, float, float] = FTS_WEIGHTS,
        *,
        fts5_idf: bool = False,
    ) -> list[SearchRow]:
        return self.fts_match(fts5_match(query), limit, sources, weights, fts5_idf=fts5_idf)

    def fts_match(
        self,
        match: str,
        limit: int,
        sources: Sequence[str] | None = None,
        weights: tuple[float, float, float] = FTS_WEIGHTS,
        *,
        fts5_idf: bool = False,
    ) -> list[SearchRow]:
        """Top ``limit`` chunks for an FTS5 MATCH expression, best first, ranked by
        bm25.py's BM25 (``fts5_idf``: FTS5's own ``bm25()``, for the anchors' bench).

        Ranks inside the FTS table and joins only the top rows (joining first would
        read every matching chunk's text). A source filter is part of the MATCH, so
        it applies before the LIMIT."""
        if sources:
            wanted = " OR ".join('source:"' + s.replace('"', '""') + '"' for s in sources)
            match = f"({match}) AND ({wanted})"
        rank = (
            "bm25(chunks_fts, ?, ?, ?, 0.0"
            if fts5_idf
            else f"{bm25.SQL_FUNCTION}(chunks_fts, ?, ?, ?, 0.0"
        )
        sql = (
            "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.heading, c.text, f.rank, "
            "c.lines, c.at, c.origin "
            f"FROM (SELECT rowid, {rank}) AS rank FROM chunks_fts "
            "WHERE chunks_fts MATCH ? ORDER BY rank, rowid LIMIT ?) f "
            "JOIN chunks c ON c.id = f.rowid ORDER BY f.rank, c.id"
        )
        args = (*weights, match, limit)
        try:
            rows: list[tuple[Any, ...]] = self.db.execute(sql, args).fetchall()
        except apsw.SQLError as exc:  # a MATCH expression FTS5 rejects
            raise StoreError(f"keyword query rejected: {exc}") from exc
        return [
            SearchRow(int(i), str(p), str(s), int(a), int(b), str(h), str(t), float(r), m, w, o)
            for i, p, s, a, b, h, t, r, m, w, o in rows
        ]

    @contextlib.contextmanager
    def keyword_postings(self, min_chunks: int = 0) -> Iterator[KeywordPostings | None]:
        """The FTS index's postings (through ``fts5vocab``, so the tokens are FTS5's
        own), read in one transaction that lasts while the caller goes through
        ``terms``; None when the FTS table was made with another tokenizer, or it
        holds fewer than ``min_chunks`` chunks (not worth it)."""
        import numpy as np

        db = self.db
        with self.read_snapshot():
            version = self.meta_get("chunksVersion")
            seq = self.change_seq()
            row = db.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
            chunks: list[tuple[int, str]] = []
            if row and FTS_TOKENIZER in str(row[0]):
                sql = "SELECT id, source FROM chunks ORDER BY id"
                chunks = [(int(i), str(src)) for i, src in db.execute(sql)]
            if not chunks or len(chunks) < min_chunks:
                yield None
                return
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.mi_vocab "
                "USING fts5vocab(main, 'chunks_fts', 'instance')"
            )
            terms = (
                (str(term), str(col), np.fromstring(docs, dtype=np.int64, sep=","))
                for term, col, docs in db.execute(
                    "SELECT term, col, group_concat(doc) FROM temp.mi_vocab GROUP BY term, col"
                )
            )
            yield KeywordPostings(version, seq, chunks, terms)

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for source, n in self.db.execute("SELECT source, count(*) FROM files GROUP BY source"):
            out.setdefault(str(source), {"files": 0, "chunks": 0})["files"] = int(n)
        for source, n in self.db.execute("SELECT source, count(*) FROM chunks GROUP BY source"):
            out.setdefault(str(source), {"files": 0, "chunks": 0})["chunks"] = int(n)
        return out

    def versions(self) -> dict[str, str | None]:
        return {
            "binding": f"apsw {apsw.apsw_version()}",
            "sqlite": apsw.sqlite_lib_version(),
            "sqliteVec": self.vec_version,
        }

    def reopen(self) -> Store:
        """Without the memory map: these connections read in bulk (the daemon's
        snapshot), and every page read through the map stays mapped into the process
        (a million chunks: 1.3 GB more RSS) while a read() leaves it to the OS's
        file cache."""
        store = Store(self.file, readonly=True)
        store.db.execute("PRAGMA mmap_size=0")
        return store

    def broken(self) -> bool:
        """The index file was deleted or replaced under this connection (someone
        cleared the state folder): what is written here could never be read again,
        and the path holds no index or another one. (A damaged file is another
        matter: ``index_damaged``.)"""
        try:
            st = os.stat(self.file)
            if current_file(self.path) != self.file:  # the path leads elsewhere now
                return True
        except (FileNotFoundError, NotADirectoryError, ForeignLink):  # gone, or not ours
            return True
        except OSError:
            return False  # cannot tell: go on with the open file
        return (st.st_dev, st.st_ino) != self._ident

    def copy_carryover(self, other: str) -> int:
        """Copy the embedding cache and open batch jobs of another index file (a
        rebuild keeps every vector already paid for). Returns cache rows copied."""
        self.db.execute("ATTACH DATABASE ? AS old", (other,))
        try:
            with self.transaction():
                self.db.execute(
                    "INSERT OR IGNORE INTO main.embedding_cache "
                    "SELECT provider, hash, dims, vector, last_used FROM old.embedding_cache"
                )
                self.db.execute(
                    "INSERT OR IGNORE INTO main.batch_jobs "
                    "SELECT id, provider, hashes, created_at, polled_at FROM old.batch_jobs"
                )
        finally:
            self.db.execute("DETACH DATABASE old")
        return self.cache_count()

    def checkpoint(self) -> None:
        """Fold the WAL into the database file (before a generation is published)."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def upkeep(self, changes_kept: int) -> None:
        """The change feed pruned (the rest of SQLite's upkeep happens in its
        transactions)."""
        self.prune_changes(changes_kept)

    def integrity(self) -> str:
        row = self.db.execute("PRAGMA integrity_check").fetchone()
        return str(row[0]) if row else "unknown"

    def consistency(self) -> list[str]:
        """Problems that a crash or a bug could leave behind, [] when there are none:
        SQLite's integrity check, chunks of no indexed file or transcript, duplicate
        chunks, FTS rows without a chunk (or the reverse), vectors without a chunk and
        chunks marked embedded that have no vector."""
        problems: list[str] = []
        ok = self.integrity()
        if ok != "ok":
            problems.append(f"integrity_check: {ok}")

        def count(sql: str) -> int:
            row = self.db.execute(sql).fetchone()
            return int(row[0]) if row else 0

        checks = [
            (
                "chunks of no indexed file or transcript",
                "SELECT count(*) FROM chunks c WHERE c.path NOT IN (SELECT path FROM files) "
                "AND c.path NOT IN (SELECT path FROM session_cursors)",
            ),
            (
                "duplicate chunks (same path and lines)",
                "SELECT count(*) FROM (SELECT 1 FROM chunks GROUP BY path, start_line, end_line "
                "HAVING count(*) > 1)",
            ),
            (
                "FTS rows without a chunk",
                "SELECT count(*) FROM chunks_fts_docsize WHERE id NOT IN (SELECT id FROM chunks)",
            ),
            (
                "chunks missing from FTS",
                "SELECT count(*) FROM chunks WHERE id NOT IN (SELECT id FROM chunks_fts_docsize)",
            ),
        ]
        if self.has_vectors():
            checks += [
                (
                    "vectors without a chunk",
                    "SELECT count(*) FROM chunks_vec WHERE rowid NOT IN (SELECT id FROM chunks)",
                ),
                (
                    "chunks marked embedded without a vector",
                    "SELECT count(*) FROM chunks WHERE embedded = 1 "
                    "AND id NOT IN (SELECT rowid FROM chunks_vec)",
                ),
            ]
        for what, sql in checks:
            n = count(sql)
            if n:
                problems.append(f"{n} {what}")
        return problems

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += os.path.getsize(str(self.file) + suffix)
        return total


def _phrase(words: Sequence[str]) -> str:
    return '"' + " ".join(w.replace('"', '""') for w in words) + '"'


def fts5_match(query: KeywordQuery) -> str:
    """The FTS5 MATCH expression of a keyword query."""
    optional = [_phrase(p) for p in query.optional]
    required = [_phrase(p) for p in query.required]
    if required:
        clause = " AND ".join(required)
        if optional:
            clause += " AND (" + " OR ".join(optional + required) + ")"
        return clause
    return " OR ".join(optional)


def _conforms(store: Store) -> IndexStore:
    return store  # mypy checks here that Store implements the whole protocol
