"""Files, chunks and their keyword postings, the change feed, transcript cursors and
skipped files of an agent's generation in PostgreSQL (``PgTables``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from indexer.api.responses import SkippedFile
from indexer.store.postgres.connection import PgBase
from indexer.store.records import ChunkChanges, ChunkRow, FileState, NewChunk
from indexer.store.records import SessionCursor as Cursor
from indexer.store.tokens import shared_tokenizer

__all__ = ["PgTables"]

_Posting = tuple[str, int, int, list[int]]  # term, chunk id, column, positions


class PgTables(PgBase):
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
        self._rows_written += len(rows)
        ids = self._new_ids(len(rows))
        postings: list[_Posting] = []
        chunk_rows = []
        for cid, c in zip(ids, rows, strict=True):
            dl = 0
            for col, text in enumerate((c.fts_body, c.heading, path, source)):
                dl += self._postings(cid, col, text, postings)
            chunk_rows.append(
                (self.agent, self.gen, cid, path, source, c.start_line, c.end_line,
                 c.heading, c.hash, c.text, dl, c.lines)
            )  # fmt: skip
        with self.db.cursor() as cur:
            cur.executemany(
                "INSERT INTO chunks(agent, gen, id, path, source, start_line, end_line, "
                "heading, hash, text, dl, lines) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                chunk_rows,
            )
            self._put_postings(cur, postings)
        return len(rows)

    def _new_ids(self, n: int) -> list[int]:
        """``n`` new chunk ids from the database's sequence, taken 256 at a time (a
        round trip per file saved; ids left over when the store closes are never
        used, which only leaves gaps)."""
        if len(self._spare_ids) < n:
            rows = self.db.execute(
                "SELECT nextval('chunk_ids') FROM generate_series(1, %s)", (max(n, 256),)
            )
            self._spare_ids.extend(int(r[0]) for r in rows)
        got, self._spare_ids = self._spare_ids[:n], self._spare_ids[n:]
        return got

    def _postings(self, cid: int, col: int, text: str, out: list[_Posting]) -> int:
        """Append ``text``'s postings for column ``col`` of chunk ``cid``; its tokens."""
        tokens = shared_tokenizer().document(text) if text else []
        where: dict[str, list[int]] = {}
        for pos, tok in enumerate(tokens):
            where.setdefault(tok, []).append(pos)
        out.extend((t, cid, col, p) for t, p in where.items())
        return len(tokens)

    def _put_postings(self, cur: Any, rows: list[_Posting]) -> None:
        """COPY the rows in its text format, rendered here in one string (psycopg's
        ``write_row`` formats each value on its own: most of a file's write time)."""
        if not rows:
            return
        lead = f"{_copy_text(self.agent)}\t{self.gen}\t"
        data = "".join(
            f"{lead}{_copy_text(term)}\t{cid}\t{col}\t{{{','.join(map(str, pos))}}}\n"
            for term, cid, col, pos in rows
        )
        with (
            self._errors(),
            cur.copy("COPY postings(agent, gen, term, id, col, positions) FROM STDIN") as copy,
        ):
            copy.write(data.encode("utf-8"))

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
        postings: list[_Posting] = []
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

    def texts_for_hashes(self, hashes: Sequence[str]) -> dict[str, str]:
        rows = self._q("SELECT hash, text FROM chunks WHERE {k} AND hash = ANY(%s)", list(hashes))
        return {str(h): str(t) for h, t in rows}

    # -- the change feed -------------------------------------------------------------

    def changes_since(self, after: int) -> ChunkChanges | None:
        if after < int(self.meta_get("changesPrunedTo") or 0):
            return None
        rows = self._q(
            "SELECT seq, chunk, kind FROM chunk_changes WHERE {k} AND seq > %s ORDER BY seq", after
        )
        return ChunkChanges.fold(rows, after, self.change_seq)

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

    def skipped(self) -> list[SkippedFile]:
        return [
            SkippedFile(path=p, source=s, reason=r, at=a)
            for p, s, r, a in self._q(
                "SELECT path, source, reason, at FROM skipped WHERE {k} ORDER BY path"
            )
        ]


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(value: str) -> str:
    """A value in COPY's text format (backslash, tab and line ends escaped)."""
    return value.translate(_COPY_ESCAPES)
