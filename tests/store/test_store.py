from __future__ import annotations

import struct
from pathlib import Path

import pytest

from indexer.errors import StoreError
from indexer.store import ChunkRow, FileState, Store
from indexer.store.sqlite.migrations import MIGRATIONS


def vec(*xs: float) -> bytes:
    return struct.pack(f"{len(xs)}f", *xs)


def test_open_creates_wal_and_migrates(tmp_path: Path) -> None:
    with Store(tmp_path / "s" / "a.sqlite") as s:
        mode = s.db.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
        names = [r[0] for r in s.db.execute("SELECT name FROM schema_migrations ORDER BY name")]
        assert names == [n for n, _ in MIGRATIONS]
        v = s.versions()
        assert v["sqlite"] and v["binding"].startswith("apsw")
    # Re-opening applies nothing twice.
    with Store(tmp_path / "s" / "a.sqlite") as s:
        assert s.integrity() == "ok"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    with Store(tmp_path / "a.sqlite") as s:
        s.db.execute("INSERT INTO schema_migrations VALUES('9999_future', 0)")
    with pytest.raises(StoreError, match="newer memindex"):
        Store(tmp_path / "a.sqlite")


def test_vector_table_ready(tmp_path: Path) -> None:
    with Store(tmp_path / "a.sqlite") as s:
        assert s.vec_version, s.vector_error
        with s.transaction():
            s.replace_file(
                "a.md",
                "memory",
                FileState("h", 1, 1),
                3,
                [
                    ChunkRow(1, 1, "", "h1", "alpha", "alpha"),
                    ChunkRow(2, 2, "", "h2", "beta", "beta"),
                ],
            )
            ids = [r[0] for r in s.db.execute("SELECT id FROM chunks ORDER BY id")]
            s.ensure_vector_table(3)
            s.put_vectors([(ids[0], vec(1, 0, 0)), (ids[1], vec(0, 1, 0))])
        hits = s.knn(vec(0.9, 0.1, 0), 2)
        assert hits[0][0] == ids[0] and hits[0][1] < hits[1][1]
        # Deleting a file removes its vectors too.
        with s.transaction():
            s.delete_file("a.md")
        assert s.db.execute("SELECT count(*) FROM chunks_vec").fetchone()[0] == 0


def test_readonly_missing_index_is_clear(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="memindex index"):
        Store(tmp_path / "none.sqlite", readonly=True)


def test_transaction_rolls_back(tmp_path: Path) -> None:
    with Store(tmp_path / "a.sqlite") as s:
        with pytest.raises(RuntimeError), s.transaction():
            s.meta_set("k", "v")
            raise RuntimeError("boom")
        assert s.meta_get("k") is None


def test_reads_do_not_wait_for_a_writer(tmp_path: Path) -> None:
    """WAL: a search answers while another connection holds the write lock."""
    import time

    from conftest import write

    from indexer.config import Config
    from indexer.engine import AgentIndex

    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# m\n- the heron nests by the pond\n")
    cfg = Config(workspace=ws, indexPath=tmp_path / "i.sqlite")
    with AgentIndex(cfg) as writer:
        writer.sync()
        writer.store.db.execute("BEGIN IMMEDIATE")  # the writer is mid-transaction
        writer.store.meta_set("busy", "yes")
        try:
            with AgentIndex(cfg, readonly=True) as reader:
                t0 = time.monotonic()
                res = reader.search("heron")["results"]
                assert res and time.monotonic() - t0 < 1.0  # busy timeout is 10 s
        finally:
            writer.store.db.execute("ROLLBACK")


def test_chunk_ids_are_never_reused(tmp_path: Path) -> None:
    """Replacing or deleting the newest chunks must not hand their ids out again:
    a reader's older keyword snapshot takes every id above its highest as new."""

    def rows(*texts: str) -> list[ChunkRow]:
        return [ChunkRow(i + 1, i + 1, "", f"h-{t}", t, t) for i, t in enumerate(texts)]

    def ids(s: Store, path: str) -> list[int]:
        return [int(r[0]) for r in s.db.execute("SELECT id FROM chunks WHERE path=?", (path,))]

    with Store(tmp_path / "a.sqlite") as s:
        with s.transaction():
            s.replace_file("a.md", "memory", FileState("1", 0, 0), 2, rows("one", "two"))
            s.replace_file("b.md", "memory", FileState("1", 0, 0), 2, rows("three", "four"))
        high = max(ids(s, "b.md"))
        with s.transaction():  # the newest file edited: its chunks replaced
            s.replace_file("b.md", "memory", FileState("2", 0, 0), 1, rows("five"))
        assert min(ids(s, "b.md")) > high
        high = max(ids(s, "b.md"))
        with s.transaction():
            s.delete_file("b.md")
            s.replace_file("c.md", "memory", FileState("1", 0, 0), 1, rows("six"))
        assert ids(s, "c.md") == [high + 1]


def test_readers_opening_at_once_wait_for_each_other(tmp_path: Path) -> None:
    """The last connection out checkpoints the WAL under a lock: a read-only open that
    met it answered "database is locked" at once (two MCP tool calls in CI). Six
    threads opening and closing 300 times each: 7 of 1800 failed before."""
    import threading

    import apsw

    from indexer.store.sqlite.connection import _open_readonly

    path = tmp_path / "a.sqlite"
    db = apsw.Connection(str(path))
    db.execute("PRAGMA journal_mode=WAL").fetchall()
    db.execute("CREATE TABLE t(a)")
    db.close()
    errors: list[str] = []

    def work() -> None:
        for _ in range(300):
            try:
                reader = _open_readonly(path)
                reader.execute("SELECT count(*) FROM t").fetchone()
                reader.close()
            except (apsw.Error, StoreError) as exc:
                errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
