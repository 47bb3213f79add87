"""Vectors (sqlite-vec), the embedding cache and batch embedding jobs."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator, Sequence

from indexer.api.responses import BatchJob
from indexer.errors import StoreError
from indexer.store.sqlite.connection import StoreBase


class VectorTables(StoreBase):
    """chunks_vec, embedding_cache and batch_jobs."""

    def ensure_vector_table(self, dims: int) -> None:
        """Create the vec0 table of chunk vectors (rowid = chunk id) for ``dims``."""
        if self.vec_version is None:
            raise StoreError(self.vector_error or "sqlite-vec is not loaded")
        if dims < 1 or dims > 8192:
            raise StoreError(f"invalid vector dimension {dims}")
        self.db.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0("
            f"embedding float[{int(dims)}] distance_metric=cosine)"
        )

    def put_vectors(self, rows: Iterable[tuple[int, bytes]]) -> None:
        """Store chunk vectors (float32 bytes) and mark those chunks embedded."""
        rows = list(rows)
        self._bump_vectors()
        self.db.executemany("DELETE FROM chunks_vec WHERE rowid=?", ((i,) for i, _ in rows))
        self.db.executemany("INSERT INTO chunks_vec(rowid, embedding) VALUES(?, ?)", rows)
        self.db.executemany("UPDATE chunks SET embedded=1 WHERE id=?", ((i,) for i, _ in rows))

    def vector_dims(self) -> int | None:
        """Dimensions of the vector table, if there is one."""
        if not self.has_vectors():
            return None
        row = self.db.execute("SELECT sql FROM sqlite_master WHERE name='chunks_vec'").fetchone()
        m = re.search(r"float\[(\d+)\]", str(row[0]) if row else "")
        return int(m.group(1)) if m else None

    def drop_vectors(self) -> None:
        """Forget every vector (a new provider or model): chunks become pending."""
        if self.has_vectors():
            self.db.execute("DROP TABLE chunks_vec")
            self._bump_vectors()
        self.db.execute("UPDATE chunks SET embedded=0 WHERE embedded<>0")

    def pending_chunks(self, limit: int, after: int = 0) -> list[tuple[int, str, str]]:
        """Chunks without a vector yet, by id after ``after``: (id, hash, text)."""
        return [
            (int(i), str(h), str(t))
            for i, h, t in self.db.execute(
                "SELECT id, hash, text FROM chunks WHERE embedded=0 AND id>? ORDER BY id LIMIT ?",
                (after, limit),
            )
        ]

    def batch_jobs(self, provider: str) -> dict[str, list[str]]:
        return {
            str(i): list(json.loads(h))
            for i, h in self.db.execute(
                "SELECT id, hashes FROM batch_jobs WHERE provider=? ORDER BY created_at",
                (provider,),
            )
        }

    def save_batch_job(self, job_id: str, provider: str, hashes: Sequence[str]) -> None:
        self.db.execute(
            "INSERT INTO batch_jobs(id, provider, hashes, created_at) VALUES(?, ?, ?, ?)",
            (job_id, provider, json.dumps(list(hashes)), time.time()),
        )

    def delete_batch_job(self, job_id: str) -> None:
        self.db.execute("DELETE FROM batch_jobs WHERE id=?", (job_id,))

    def all_batch_jobs(self) -> list[BatchJob]:
        return [
            BatchJob(id=i, provider=p, chunks=len(json.loads(h)), createdAt=c)
            for i, p, h, c in self.db.execute(
                "SELECT id, provider, hashes, created_at FROM batch_jobs ORDER BY created_at"
            )
        ]

    def any_embedded(self) -> bool:
        row = self.db.execute("SELECT EXISTS(SELECT 1 FROM chunks WHERE embedded=1)").fetchone()
        return bool(row and row[0])

    def pending_count(self) -> int:
        row = self.db.execute("SELECT count(*) FROM chunks WHERE embedded=0").fetchone()
        return int(row[0]) if row else 0

    def vector_rows(self, ids: Sequence[int]) -> list[tuple[int, str, bytes]]:
        """(chunk id, source, vector) of each of ``ids`` that has one, by id."""
        if not self.has_vectors():
            return []
        sql = (
            "SELECT c.id, c.source, v.embedding FROM chunks c JOIN chunks_vec v "
            "ON v.rowid = c.id WHERE c.id IN ({marks})"
        )
        return sorted((int(i), str(s), bytes(v)) for i, s, v in self._rows_in(sql, ids))

    def all_vectors(self) -> Iterator[tuple[int, str, str, bytes]]:
        """(chunk id, source, chunk hash, vector) for every embedded chunk."""
        if not self.has_vectors():
            return iter(())
        return (
            (int(i), str(s), str(h), bytes(v))
            for i, s, h, v in self.db.execute(
                "SELECT c.id, c.source, c.hash, v.embedding "
                "FROM chunks_vec v JOIN chunks c ON c.id = v.rowid"
            )
        )

    def cache_get(self, provider: str, hashes: Sequence[str]) -> dict[str, bytes]:
        now = time.time()
        sql = "SELECT hash, vector FROM embedding_cache WHERE provider=? AND hash IN ({marks})"
        out = {str(h): bytes(v) for h, v in self._rows_in(sql, hashes, (provider,))}
        if out and not self.readonly:
            self.db.executemany(
                "UPDATE embedding_cache SET last_used=? WHERE provider=? AND hash=?",
                ((now, provider, h) for h in out),
            )
        return out

    def cache_put(self, provider: str, dims: int, items: Iterable[tuple[str, bytes]]) -> None:
        now = time.time()
        self.db.executemany(
            "INSERT INTO embedding_cache(provider, hash, dims, vector, last_used) "
            "VALUES(?, ?, ?, ?, ?) ON CONFLICT(provider, hash) DO UPDATE SET "
            "vector=excluded.vector, dims=excluded.dims, last_used=excluded.last_used",
            ((provider, h, dims, v, now) for h, v in items),
        )

    def cache_prune(self, max_entries: int) -> int:
        """Drop the least recently used entries above ``max_entries``."""
        row = self.db.execute("SELECT count(*) FROM embedding_cache").fetchone()
        extra = (int(row[0]) if row else 0) - max_entries
        if extra <= 0:
            return 0
        self.db.execute(
            "DELETE FROM embedding_cache WHERE (provider, hash) IN (SELECT provider, hash "
            "FROM embedding_cache ORDER BY last_used LIMIT ?)",
            (extra,),
        )
        return extra

    def cache_count(self) -> int:
        row = self.db.execute("SELECT count(*) FROM embedding_cache").fetchone()
        return int(row[0]) if row else 0

    def knn(self, query: bytes, k: int) -> list[tuple[int, float]]:
        """Nearest chunks by cosine distance: [(chunk id, distance)]."""
        return [
            (int(r), float(d))
            for r, d in self.db.execute(
                "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?",
                (query, k),
            )
        ]
