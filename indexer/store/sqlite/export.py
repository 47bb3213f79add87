"""Reading a whole SQLite index out for ``memindex migrate`` (``Export``): its meta,
files, chunks grouped by file, embedding cache, batch jobs and each chunk hash's
vector, in the raw form another store's writer takes them in."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from itertools import groupby

from indexer.store.records import FileState
from indexer.store.sqlite.connection import StoreBase

__all__ = ["ExportedChunk", "SqliteExport"]

# (start line, end line, heading, hash, text, line map)
ExportedChunk = tuple[int, int, str, str, str, str | None, float | None, str | None]


class SqliteExport(StoreBase):
    def export_meta(self) -> Iterator[tuple[str, str]]:
        for key, value in self.db.execute("SELECT key, value FROM meta"):
            yield str(key), str(value)

    def export_files(self) -> dict[str, tuple[str, FileState, int]]:
        """path -> (source, state, lines)."""
        return {
            str(p): (str(s), FileState(str(h), int(m), int(z)), int(n))
            for p, s, h, m, z, n in self.db.execute(
                "SELECT path, source, hash, mtime_ns, size, lines FROM files"
            )
        }

    def export_chunks(self) -> Iterator[tuple[str, list[ExportedChunk]]]:
        """Each path's chunks in line order (including chunks of no file row; a
        file's kept chunks are older than its new ones, so ids alone are not)."""
        rows = self.db.execute(
            "SELECT path, start_line, end_line, heading, hash, text, lines, at, origin "
            "FROM chunks ORDER BY path, start_line, id"
        )
        for path, group in groupby(rows, key=lambda r: str(r[0])):
            yield (
                path,
                [
                    (
                        int(a),
                        int(b),
                        str(x),
                        str(h),
                        str(t),
                        None if m is None else str(m),
                        None if w is None else float(w),
                        None if o is None else str(o),
                    )  # fmt: skip
                    for _, a, b, x, h, t, m, w, o in group
                ],
            )

    def export_batch_jobs(self) -> Iterator[tuple[str, str, list[str]]]:
        """(job id, provider, chunk hashes) of every open batch job."""
        for job_id, provider, hashes in self.db.execute(
            "SELECT id, provider, hashes FROM batch_jobs"
        ):
            yield str(job_id), str(provider), list(json.loads(hashes))

    def export_cache(self) -> Iterator[tuple[str, int, Iterator[tuple[str, bytes]]]]:
        """The embedding cache grouped by (provider, dims): (hash, vector) pairs."""
        rows = self.db.execute(
            "SELECT provider, dims, hash, vector FROM embedding_cache ORDER BY provider, dims"
        )
        for (provider, dims), group in groupby(rows, key=lambda r: (str(r[0]), int(r[1]))):
            yield provider, dims, ((str(h), bytes(v)) for _, _, h, v in group)

    def vectors_by_hash(self, hashes: Sequence[str]) -> dict[str, bytes]:
        """One stored vector per chunk hash (of the hashes that have one)."""
        if not hashes or not self.has_vectors():
            return {}
        marks = ",".join("?" * len(hashes))
        return {
            str(h): bytes(v)
            for h, v in self.db.execute(
                "SELECT c.hash, v.embedding FROM chunks c JOIN chunks_vec v ON v.rowid = c.id "
                f"WHERE c.hash IN ({marks}) GROUP BY c.hash",
                list(hashes),
            )
        }
