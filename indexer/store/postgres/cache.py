"""A PostgreSQL store's connection plumbing (``_q``, ``_errors``), the embedding
cache every agent shares (keyed by provider and chunk hash as on SQLite, without an
agent: a chunk embedded by one host is never embedded again by another) and an
agent's batch embedding jobs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence

from indexer.api.responses import BatchJob
from indexer.store.postgres.connection import PgBase

__all__ = ["PgCache"]


class PgCache(PgBase):
    """The shared embedding cache and the agent's batch jobs."""

    def cache_get(self, provider: str, hashes: Sequence[str]) -> dict[str, bytes]:
        rows = self._q(
            "SELECT hash, vector FROM embedding_cache WHERE provider=%s AND hash = ANY(%s)",
            provider, list(hashes), keyed=False, binary=True,
        ).fetchall()  # fmt: skip
        out = {str(h): bytes(v) for h, v in rows}
        if out and not self.readonly:
            self._q("UPDATE embedding_cache SET last_used=%s WHERE provider=%s AND hash = ANY(%s)",
                    time.time(), provider, list(out), keyed=False)  # fmt: skip
        return out

    def cache_put(self, provider: str, dims: int, items: Iterable[tuple[str, bytes]]) -> None:
        now = time.time()
        with self._errors(), self.db.cursor() as cur:
            cur.executemany(
                "INSERT INTO embedding_cache(provider, hash, dims, vector, last_used) "
                "VALUES (%s, %s, %s, %b, %s) ON CONFLICT (provider, hash) DO UPDATE SET "
                "vector=excluded.vector, dims=excluded.dims, last_used=excluded.last_used",
                [(provider, h, dims, v, now) for h, v in items],
            )

    def cache_prune(self, max_entries: int) -> int:
        extra = self.cache_count() - max_entries
        if extra <= 0:
            return 0
        self._q(
            "DELETE FROM embedding_cache WHERE (provider, hash) IN (SELECT provider, hash "
            "FROM embedding_cache ORDER BY last_used LIMIT %s)",
            extra,
            keyed=False,
        )
        return extra

    def cache_count(self) -> int:
        return int(self._q("SELECT count(*) FROM embedding_cache", keyed=False).fetchone()[0])

    def batch_jobs(self, provider: str) -> dict[str, list[str]]:
        rows = self._q(
            "SELECT id, hashes FROM batch_jobs WHERE {k} AND provider=%s ORDER BY created_at",
            provider,
        )
        return {str(i): list(json.loads(h)) for i, h in rows}

    def save_batch_job(self, job_id: str, provider: str, hashes: Sequence[str]) -> None:
        self._q(
            "INSERT INTO batch_jobs(agent, gen, id, provider, hashes, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            job_id, provider, json.dumps(list(hashes)), time.time(),
        )  # fmt: skip

    def delete_batch_job(self, job_id: str) -> None:
        self._q("DELETE FROM batch_jobs WHERE {k} AND id=%s", job_id)

    def all_batch_jobs(self) -> list[BatchJob]:
        rows = self._q(
            "SELECT id, provider, hashes, created_at FROM batch_jobs WHERE {k} ORDER BY created_at"
        )
        return [
            BatchJob(id=i, provider=p, chunks=len(json.loads(h)), createdAt=c)
            for i, p, h, c in rows
        ]
