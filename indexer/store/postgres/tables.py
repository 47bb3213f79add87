"""Files, chunks and their keyword terms, the change feed, transcript cursors and
skipped files of an agent's generation in PostgreSQL (``PgTables``)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from indexer.api.responses import SkippedFile
from indexer.store.postgres.connection import PgBase
from indexer.store.records import (
    STORED_CHUNK_COLS,
    ChunkChanges,
    ChunkRow,
    FileState,
    NewChunk,
    NewFile,
    kept_apart,
)
from indexer.store.records import SessionCursor as Cursor
from indexer.store.tokens import shared_tokenizer

__all__ = ["PgTables"]

_BY_IDS = "agent=%s AND gen=%s AND id = ANY(%s)"  # rows of chunk ids, never a join

# Files' rows go to the database as JSON arrays of records (json_to_recordset):
# psycopg dumps a list parameter element by element in Python (half a file's write
# time as arrays), a string in C.
_FILE_COLS = "p text, so text, h text, m int8, sz int8, ln int4, at float8"
_CHUNK_COLS = (
    "id int8, fp text, fs text, s int4, e int4, h text, k text, t text, dl int4, l text, "
    "w float8, o text"
)
_TERM_COLS = "tt text[], b int4[], p int4[], hd text[], pa text[], so text[]"
# The hashes are memindex_term_hash's (schema.py) with its "agent/gen/" prefix made
# once, not per term: the same text hashed, 10% of the server's time a file saved.
_TERMS_INSERT = (
    "INSERT INTO chunk_terms(agent, gen, id, terms, hashes, body, pos, heading, path, source) "
    "SELECT %s, %s, id, tt, ARRAY(SELECT hashtextextended(%s::text || t, 0) "
    "FROM unnest(tt) WITH ORDINALITY x(t, i) ORDER BY i), b, p, hd, pa, so FROM u"
)


class PgTables(PgBase):
    _chunk_counts: tuple[str | None, dict[str, int]] | None = None  # by chunksVersion
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
        """The file's chunks and row, then their terms and vectors by an array of ids
        (a join with the deleted rows, planned on stale statistics, scanned every
        chunk's terms: 11 ms a file at 3,700 chunks): two statements."""
        if self.db.info.transaction_status == 0:  # alone: its rows evicted before commit
            with self.transaction():
                return self.delete_file(path)
        self._bump_chunks()  # (before: readers on the writer's board ask the database)
        (ids,) = self._q(
            "WITH d AS (DELETE FROM chunks WHERE {k} AND path=%s RETURNING id), "
            "f AS (DELETE FROM files WHERE agent=%s AND gen=%s AND path=%s) "
            "SELECT coalesce(array_agg(id), '{}') FROM d",
            path, self.agent, self.gen, path,
        ).fetchone()  # fmt: skip
        if ids:
            self._delete_ids(ids, chunks=False)
        return len(ids)

    def _delete_ids(self, ids: list[int], *, chunks: bool) -> None:
        """Chunks ``ids``' terms and vectors (and with ``chunks`` their chunk rows) in
        one statement, by an array of ids; their kept rows evicted first."""
        self._evict_rows(ids)
        tables = ["chunks", "chunk_terms"] if chunks else ["chunk_terms"]
        ctes = ", ".join(f"d_{t} AS (DELETE FROM {t} WHERE {_BY_IDS})" for t in tables)
        vectors = self._q(
            f"WITH {ctes} DELETE FROM chunk_vectors WHERE {_BY_IDS}",
            *(self.agent, self.gen, ids) * (len(tables) + 1),
            keyed=False,
        ).rowcount
        if vectors:
            self._bump_vectors()

    def _insert_files(self, files: Sequence[NewFile]) -> int:
        """``files``' rows (an upsert: a replaced file keeps its row) and their chunks
        under new ids from the database's sequence (ids only grow), with the chunks'
        term rows: one statement, however many files (a daily log's write is mostly
        the statement's own cost: several at once cost the server a fifth less)."""
        recs, heads = [], []
        for f in files:
            heads.append({"p": f.path, "so": f.source, "h": f.state.hash,
                          "m": f.state.mtime_ns, "sz": f.state.size, "ln": f.lines,
                          "at": time.time()})  # fmt: skip
            recs.extend(self._chunk_records(f.path, f.source, f.chunks))
        if recs:
            self._bump_chunks()
        self._q(
            f"WITH fi AS (SELECT * FROM json_to_recordset(%s::json) AS fi({_FILE_COLS})), "
            "f AS (INSERT INTO files(agent, gen, path, source, hash, mtime_ns, size, lines, "
            "indexed_at) SELECT %s, %s, p, so, h, m, sz, ln, at FROM fi ON CONFLICT "
            "(agent, gen, path) DO UPDATE SET hash=excluded.hash, mtime_ns=excluded.mtime_ns, "
            "size=excluded.size, lines=excluded.lines, indexed_at=excluded.indexed_at), "
            f"u AS (SELECT * FROM json_to_recordset(%s::json) AS u({_CHUNK_COLS}, "
            f"{_TERM_COLS})), c AS (INSERT INTO chunks(agent, gen, id, path, source, start_line, "
            "end_line, heading, hash, text, dl, lines, at, origin) SELECT %s, %s, id, fp, fs, s, "
            "e, h, k, t, dl, l, w, o FROM u) " + _TERMS_INSERT,
            json.dumps(heads, ensure_ascii=False), self.agent, self.gen,
            json.dumps(recs, ensure_ascii=False), self.agent, self.gen,
            self.agent, self.gen, self._hash_prefix, keyed=False,
        )  # fmt: skip
        self._rows_written += len(recs)
        self._rows_total += len(recs)
        return len(recs)

    def _chunk_records(
        self, path: str, source: str, chunks: Iterable[ChunkRow]
    ) -> list[dict[str, Any]]:
        """``path``'s chunks as records of ``_CHUNK_COLS`` and ``_TERM_COLS``, each
        under a new id."""
        rows = list(chunks)
        if not rows:
            return []
        ids = self._new_ids(len(rows))
        doc = shared_tokenizer().document
        path_toks, source_toks = doc(path), doc(source)
        recs = []
        for cid, c in zip(ids, rows, strict=True):
            body = doc(c.fts_body) if c.fts_body else []
            heading = doc(c.heading) if c.heading else []
            dl = len(body) + len(heading) + len(path_toks) + len(source_toks)
            rec = _terms_record(cid, body, heading, path_toks, source_toks)
            rec.update(s=c.start_line, e=c.end_line, h=c.heading, k=c.hash, t=c.text, dl=dl,
                       l=c.lines, w=c.at, o=c.origin, fp=path, fs=source)  # fmt: skip
            recs.append(rec)
        return recs

    @property
    def _hash_prefix(self) -> str:
        """What memindex_term_hash puts before a term: ``agent/gen/``."""
        return f"{self.agent}/{self.gen}/"

    def _new_ids(self, n: int) -> list[int]:
        """``n`` new chunk ids from the database's sequence, taken 256 at a time (a
        round trip per file saved; ids left over when the store closes are never
        used, which only leaves gaps)."""
        if len(self._spare_ids) < n:
            rows = self._q(
                "SELECT nextval('chunk_ids') FROM generate_series(1, %s)", max(n, 256), keyed=False
            )
            self._spare_ids.extend(int(r[0]) for r in rows)
        got, self._spare_ids = self._spare_ids[:n], self._spare_ids[n:]
        return got

    def append_chunks(
        self, path: str, source: str, state: FileState, lines: int, chunks: Iterable[ChunkRow]
    ) -> int:
        return self._insert_files([NewFile(path, source, state, lines, list(chunks))])

    def append_files(self, files: Sequence[NewFile]) -> int:
        return self._insert_files(files) if files else 0

    def replace_file(
        self, path: str, source: str, state: FileState, lines: int, chunks: Iterable[ChunkRow]
    ) -> tuple[int, int]:
        """``path``'s rows become ``chunks``, the unchanged ones kept (base.py)."""
        if self.db.info.transaction_status == 0:  # alone: its rows evicted before commit
            with self.transaction():
                return self.replace_file(path, source, state, lines, chunks)
        stored = self._q(f"SELECT {STORED_CHUNK_COLS} FROM chunks WHERE {{k}} AND path=%s", path)
        new, gone = kept_apart(stored, chunks)
        if gone:
            self._bump_chunks()  # (before: readers on the writer's board ask the database)
            self._delete_ids(gone, chunks=True)
        return len(gone), self.append_chunks(path, source, state, lines, new)

    def drop_chunks_after(self, path: str, line: int) -> int:
        if self.db.info.transaction_status == 0:  # alone: its rows evicted before commit
            with self.transaction():
                return self.drop_chunks_after(path, line)
        ids = [
            int(r[0])
            for r in self._q(
                "SELECT id FROM chunks WHERE {k} AND path=%s AND start_line>%s", path, line
            )
        ]
        if ids:
            self._bump_chunks()  # (before: readers on the writer's board ask the database)
            self._delete_ids(ids, chunks=True)
        return len(ids)

    def rename_path(self, old: str, new: str, prepare: Callable[[str], str]) -> None:
        moved = [int(r[0]) for r in self._q("SELECT id FROM chunks WHERE {k} AND path=%s", old)]
        self._evict_rows(moved)
        got = self._q(
            "SELECT id, terms, body, pos, heading, source FROM chunk_terms WHERE {k} "
            "AND id = ANY(%s) ORDER BY id",
            moved,
        ).fetchall()
        self._q("UPDATE chunks SET path=%s WHERE {k} AND path=%s", old, before=(new,))
        self._bump_chunks()
        path_toks = shared_tokenizer().document(new)
        recs: list[dict[str, Any]] = []
        lengths: list[tuple[int, int]] = []
        for cid, terms, counts, pos, heading, source in got:
            body: list[str | None] = [None] * sum(counts)  # the body's tokens again
            for term, at in body_positions(terms, counts, pos):
                for p in at:
                    body[p] = term
            toks = [t for t in body if t is not None]  # (positions are 0..n-1: all set)
            recs.append(_terms_record(int(cid), toks, heading, path_toks, source))
            lengths.append((int(cid), len(toks) + len(heading) + len(path_toks) + len(source)))
        ids = [cid for cid, _ in lengths]
        self._q("DELETE FROM chunk_terms WHERE {k} AND id = ANY(%s)", ids)
        if recs:
            self._q(
                f"WITH u AS (SELECT * FROM json_to_recordset(%s::json) AS u(id int8, "
                f"{_TERM_COLS})) " + _TERMS_INSERT,
                json.dumps(recs, ensure_ascii=False), self.agent, self.gen, self._hash_prefix,
                keyed=False,
            )  # fmt: skip
        # a path's length changes the row's length
        self._q(
            "UPDATE chunks c SET dl = n.dl FROM unnest(%s::bigint[], %s::int[]) n(id, dl) "
            "WHERE c.agent=%s AND c.gen=%s AND c.id = n.id",
            ids, [dl for _, dl in lengths], self.agent, self.gen, keyed=False,
        )  # fmt: skip
        for table in ("files", "session_cursors"):
            self._q(f"UPDATE {table} SET path=%s WHERE {{k}} AND path=%s", old, before=(new,))

    def clear(self) -> None:
        self._bump_chunks()
        self._evict_rows(None)
        if self.has_vectors():  # as SQLite drops its vector table
            self._q("DELETE FROM chunk_vectors WHERE {k}")
            self._q("DELETE FROM meta WHERE {k} AND key='vectorDims'")
            self._bump_vectors()
        for table in ("chunk_terms", "chunks", "files", "skipped", "session_cursors"):
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
        """Files and chunks by source. The chunks' counts (a scan of the agent's
        chunks: 4.5 ms at 10,000) are kept while chunksVersion stays the same (every
        change of chunks writes it): ``status`` is polled."""
        out: dict[str, dict[str, int]] = {}
        for source, n in self._q("SELECT source, count(*) FROM files WHERE {k} GROUP BY source"):
            out.setdefault(str(source), {"files": 0, "chunks": 0})["files"] = int(n)
        version = self.meta_get("chunksVersion")
        cached = self._chunk_counts
        if cached is None or cached[0] != version or version is None:
            got = self._q("SELECT source, count(*) FROM chunks WHERE {k} GROUP BY source")
            cached = self._chunk_counts = (version, {str(s): int(n) for s, n in got})
        for source, n in cached[1].items():
            out.setdefault(source, {"files": 0, "chunks": 0})["chunks"] = n
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


def body_positions(
    terms: Sequence[str], counts: Sequence[int], pos: Sequence[int]
) -> Iterator[tuple[str, Sequence[int]]]:
    """(term, its positions in the body) of a chunk_terms row's body terms (those a
    ``_terms_record`` counts at least once), from its terms, body and pos columns."""
    at = 0
    for term, n in zip(terms, counts, strict=True):
        if n:
            yield term, pos[at : at + n]
        at += n


def _terms_record(
    cid: int, body: Sequence[str], heading: list[str], path: list[str], source: list[str]
) -> dict[str, Any]:
    """Chunk ``cid``'s row of chunk_terms (as ``_TERM_COLS`` name them; the database
    adds the hashes): its distinct terms (the body's in sorted order, then the other
    columns' that are not in it), each term's count and positions in the body, the
    other columns' tokens."""
    counts = Counter(body)
    mine = sorted(counts)
    rest = [t for t in dict.fromkeys((*heading, *path, *source)) if t not in counts]
    return {
        "id": cid,
        "tt": [*mine, *rest],
        "b": [counts[t] for t in mine] + [0] * len(rest),
        "p": sorted(range(len(body)), key=body.__getitem__),  # by term, then position
        "hd": heading,
        "pa": path,
        "so": source,
    }
