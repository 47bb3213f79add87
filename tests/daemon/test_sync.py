from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import write

from indexer.config import ChunkingConfig, Config, LimitsConfig
from indexer.engine import AgentIndex
from indexer.errors import IndexMismatch
from indexer.indexing.pipeline import sync
from indexer.store import Store


def paths(idx: AgentIndex) -> set[str]:
    return set(idx.store.file_states())


def test_first_sync_then_nothing_to_do(cfg: Config) -> None:
    with AgentIndex(cfg) as idx:
        r1 = idx.sync()
        assert (r1.added, r1.updated, r1.removed) == (3, 0, 0)
        assert r1.chunksWritten == 4  # MEMORY.md: its 2 entries
        r2 = idx.sync()
        assert (r2.added, r2.updated, r2.removed, r2.chunksWritten) == (0, 0, 0, 0)
        assert r2.unchanged == 3


def _chunks(idx: AgentIndex, path: str) -> list[tuple[int, int, str]]:
    got = idx.store.chunk_rows(range(1, 100_000)).values()
    return sorted((r.start_line, r.end_line, r.text) for r in got if r.path == path)


def test_appending_to_a_long_log_rewrites_only_its_tail(
    cfg: Config, workspace: Path, tmp_path: Path
) -> None:
    """A daily log grows by appends: the sync replaces its last chunk and adds the
    new one, keeping the rest (ids, vectors), and the index holds exactly what a
    fresh index of the same file holds."""
    cfg = replace(cfg, chunking=ChunkingConfig(tokens=40, overlap=8))
    log = workspace / "memory/2026-11-02.md"
    lines = [f"- note {n}: the heron and the {n} reeds by the pond" for n in range(60)]
    log.write_text("# 2026-11-02\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    with AgentIndex(cfg) as idx:
        first = idx.sync()
        assert first.chunksWritten > 20
        with log.open("a", encoding="utf-8") as fh:
            fh.write("- note 60: a kestrel over the reeds\n")
        r = idx.sync()
        assert r.updated == 1 and r.chunksRemoved <= 1 and 1 <= r.chunksWritten <= 2
        got = _chunks(idx, "memory/2026-11-02.md")
        hit = idx.search("kestrel")["results"][0]
        assert hit["startLine"] <= 63 == hit["endLine"]
    with AgentIndex(replace(cfg, indexPath=tmp_path / "fresh.sqlite")) as fresh:
        fresh.sync()
        assert got == _chunks(fresh, "memory/2026-11-02.md")


def test_edit_delete_rename(cfg: Config, workspace: Path) -> None:
    with AgentIndex(cfg) as idx:
        idx.sync()
        p = workspace / "memory/2026-11-01.md"
        p.write_text("# 2026-11-01\n\n- Walked the cat instead.\n", encoding="utf-8")
        r = idx.sync()
        assert (r.updated, r.added, r.removed) == (1, 0, 0)
        assert "cat instead" in idx.get("memory/2026-11-01.md")["text"]
        assert (
            idx.search("cat instead", min_score=0)["results"][0]["path"] == "memory/2026-11-01.md"
        )

        p.rename(workspace / "memory/2026-11-03.md")
        r = idx.sync()
        assert (r.added, r.removed) == (1, 1)
        assert paths(idx) == {"MEMORY.md", "memory/2026-11-02.md", "memory/2026-11-03.md"}
        hits = idx.search("cat instead", min_score=0)["results"]
        assert [h["path"] for h in hits] == ["memory/2026-11-03.md"]

        (workspace / "memory/2026-11-03.md").unlink()
        r = idx.sync()
        assert r.removed == 1
        assert idx.search("cat instead", min_score=0)["results"] == []
        assert idx.status()["sources"]["memory"] == {"files": 2, "chunks": 3}


def test_touch_without_change_does_not_rewrite(cfg: Config, workspace: Path) -> None:
    with AgentIndex(cfg) as idx:
        idx.sync()
        p = workspace / "MEMORY.md"
        os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 5_000_000_000))
        r = idx.sync()
        assert r.chunksWritten == 0 and r.updated == 0 and r.unchanged == 3
        r = idx.sync()  # the new mtime was recorded: the cheap check skips it now
        assert r.unchanged == 3


def test_bad_files_are_skipped_with_reasons(cfg: Config, workspace: Path) -> None:
    write(workspace, "memory/binary.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR")
    write(workspace, "memory/latin1.md", "caf\xe9 au lait".encode("latin-1"))
    write(workspace, "memory/huge.md", "x" * 5000)
    small = replace(cfg, limits=LimitsConfig(maxFileBytes=4096))
    with AgentIndex(small) as idx:
        r = idx.sync()
        reasons = {s["path"]: s["reason"] for s in r.skipped}
        assert "NUL" in reasons["memory/binary.md"]
        assert "UTF-8" in reasons["memory/latin1.md"]
        assert "too large" in reasons["memory/huge.md"]
        assert r.added == 3  # the good files still went in
        st = idx.status()
        assert {s["path"] for s in st["skipped"]} == set(reasons)
        assert idx.store.integrity() == "ok"
        # Fixing a file clears its skip entry.
        write(workspace, "memory/latin1.md", "café au lait")
        idx.sync()
        assert {s["path"] for s in idx.status()["skipped"]} == {
            "memory/binary.md",
            "memory/huge.md",
        }
        assert idx.search("café", min_score=0)["results"][0]["path"] == "memory/latin1.md"
        # A good file that turns binary loses its stale rows.
        write(workspace, "memory/latin1.md", b"\x00\x01")
        r = idx.sync()
        assert r.removed == 1
        assert "memory/latin1.md" not in paths(idx)


def test_a_skipped_file_is_a_warning_once_per_reason(
    cfg: Config, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The daemon syncs every few minutes (``sync.rescanMs``): a file that stays
    skipped must not fill its log; a new reason is a new warning."""
    write(workspace, "memory/blob.md", b"\x00\x01binary")

    def warned() -> list[str]:
        got = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        caplog.clear()
        return got

    with AgentIndex(cfg) as idx:
        caplog.set_level("DEBUG", logger="indexer.indexing.pipeline")
        idx.sync()
        assert warned() == ["skipped memory/blob.md: binary file (contains NUL bytes)"]
        idx.sync()
        assert warned() == []
        assert idx.status()["skipped"][0]["path"] == "memory/blob.md"  # still listed
        write(workspace, "memory/blob.md", b"caf\xe9")
        idx.sync()
        assert warned() == ["skipped memory/blob.md: not valid UTF-8 (byte 0xe9 at offset 3)"]


def test_file_vanishing_mid_sync(cfg: Config, workspace: Path) -> None:
    """A file listed by discovery but gone when read counts as deleted."""
    import indexer.sources.files as source_files

    with AgentIndex(cfg) as idx:
        idx.sync()
        target = workspace / "memory/2026-11-02.md"
        target.write_text("# changed\n", encoding="utf-8")
        real_read = source_files.read_text

        def vanish_then_read(root, parts, max_bytes, **kw):  # type: ignore[no-untyped-def]
            path = Path(root, *parts)
            if path == target:
                path.unlink()  # the file goes away between listing and reading
            return real_read(root, parts, max_bytes, **kw)

        source_files.read_text = vanish_then_read  # type: ignore[assignment]
        try:
            r = idx.sync()
        finally:
            source_files.read_text = real_read
        assert r.removed == 1 and not r.errors
        assert "memory/2026-11-02.md" not in paths(idx)
        assert idx.store.integrity() == "ok"


def test_chunking_change_rebuilds(cfg: Config) -> None:
    with AgentIndex(cfg) as idx:
        idx.sync()
    other = replace(cfg, chunking=ChunkingConfig(tokens=64, overlap=8))
    with AgentIndex(other) as idx:
        r = idx.sync()
        assert r.rebuilt and "settings" in r.rebuilt
        assert r.added == 3


def test_index_never_answers_for_another_workspace(tmp_path: Path, cfg: Config) -> None:
    with AgentIndex(cfg) as idx:
        idx.sync()
    ws2 = tmp_path / "other"
    write(ws2, "MEMORY.md", "# Other\n- nothing about bread here\n")
    moved = replace(cfg, workspace=ws2)
    with AgentIndex(moved) as idx:
        with pytest.raises(IndexMismatch):  # before the rebuild: refuse, never answer
            idx.search("rye", min_score=0)
        r = idx.sync()
        assert r.rebuilt and "workspace" in r.rebuilt
        assert idx.search("rye", min_score=0)["results"] == []
        assert idx.search("bread", min_score=0)["results"][0]["path"] == "MEMORY.md"
        assert paths(idx) == {"MEMORY.md"}


def test_default_index_path_differs_per_workspace(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    pa = Config(workspace=a).resolved_index_path()
    pb = Config(workspace=b).resolved_index_path()
    assert pa != pb
    assert Config(workspace=a, agentId="main").resolved_index_path().name == "main.sqlite"


def test_crash_mid_transaction_leaves_old_version(
    cfg: Config, workspace: Path, tmp_path: Path
) -> None:
    """A process killed while replacing a file leaves the old rows, never a mix."""
    with AgentIndex(cfg) as idx:
        idx.sync()
        before = idx.search("rye", min_score=0)["results"]
    assert before
    script = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from indexer.store import Store, ChunkRow, FileState
        s = Store(Path({str(cfg.indexPath)!r}))
        s.db.execute("BEGIN IMMEDIATE")
        s.replace_file("MEMORY.md", "memory", FileState("x", 1, 1), 1,
                       [ChunkRow(1, 1, "", "h", "half written", "half written")])
        os._exit(9)  # die before COMMIT
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    with Store(cfg.indexPath) as s:  # type: ignore[arg-type]
        assert s.integrity() == "ok"
        assert s.file_states()["MEMORY.md"].hash != "x"
    with AgentIndex(cfg) as idx:
        assert idx.search("rye", min_score=0)["results"] == before
        assert idx.search("half written", min_score=0)["results"] == []


def test_sync_uses_one_store_for_many_files(tmp_path: Path) -> None:
    ws = tmp_path / "big"
    for i in range(300):
        write(ws, f"memory/2026-01-{i:03d}.md", f"# day {i}\n\n- note number {i} token{i}\n")
    cfg = Config(workspace=ws, indexPath=tmp_path / "big.sqlite")
    with Store(cfg.indexPath) as store:  # type: ignore[arg-type]
        r = sync(store, cfg)
        assert r.added == 300 and r.chunksWritten == 300
        assert store.counts()["memory"] == {"files": 300, "chunks": 300}
