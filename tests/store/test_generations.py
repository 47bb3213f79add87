from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

from conftest import write
from daemon_util import wait_for

from indexer.config import ChunkingConfig, Config
from indexer.engine import AgentIndex
from indexer.store import Store
from indexer.store.sqlite.generations import cleanup, current_file


def many(workspace: Path, n: int = 40) -> None:
    for i in range(n):
        write(
            workspace,
            f"memory/2026-05-{i:02d}.md",
            "# day\n\n" + "\n".join(f"- line {j} of day {i} about otters" for j in range(40)),
        )


def chunk_count(path: Path) -> int:
    with Store(path, readonly=True) as s:
        return int(s.db.execute("SELECT count(*) FROM chunks").fetchone()[0])


def test_rebuild_swaps_generations_and_old_readers_keep_answering(
    cfg: Config, workspace: Path
) -> None:
    many(workspace)
    with AgentIndex(cfg) as idx:
        idx.sync()
    before = chunk_count(cfg.indexPath)  # type: ignore[arg-type]
    old_reader = AgentIndex(cfg, readonly=True)  # a search in flight during the rebuild
    small = replace(cfg, chunking=ChunkingConfig(tokens=100, overlap=10))
    with AgentIndex(small) as idx:
        rep = idx.sync()
        assert rep.rebuilt == "chunking settings changed"
    path: Path = cfg.indexPath  # type: ignore[assignment]
    assert path.is_symlink() and current_file(path).name.startswith("index.g")
    assert chunk_count(path) > before
    # The reader opened before the swap still answers from the old generation.
    assert old_reader.search("otters", min_score=0)["results"]
    assert old_reader.store.file != current_file(path)
    old_reader.close()
    with AgentIndex(small, readonly=True) as fresh:
        assert fresh.search("otters", min_score=0)["results"]
        assert fresh.store.integrity() == "ok"
    # A second rebuild moves to a third generation; old ones go after the grace period.
    with AgentIndex(small) as idx:
        assert idx.sync(force=True).rebuilt == "forced"
    removed = cleanup(path, grace_s=0)
    names = {p.name for p in path.parent.iterdir()}
    assert current_file(path).name in names and removed
    assert not any(
        n.endswith(".sqlite") and n.startswith("index.g") and n != current_file(path).name
        for n in names
    )


def test_interrupted_rebuild_keeps_the_current_generation(cfg: Config, workspace: Path) -> None:
    many(workspace)
    with AgentIndex(cfg) as idx:
        idx.sync()
    before = current_file(cfg.indexPath)  # type: ignore[arg-type]
    calls = {"n": 0}

    def stop_soon() -> bool:
        calls["n"] += 1
        return calls["n"] > 5

    small = replace(cfg, chunking=ChunkingConfig(tokens=100, overlap=10))
    with AgentIndex(small) as idx:
        rep = idx.sync(should_stop=stop_soon)
        assert rep.stopped and rep.rebuilt is None
    assert current_file(cfg.indexPath) == before  # type: ignore[arg-type]
    leftovers = [p for p in cfg.indexPath.parent.iterdir() if ".g" in p.name]  # type: ignore[union-attr]
    assert leftovers == []
    with AgentIndex(cfg, readonly=True) as idx:
        assert idx.search("otters", min_score=0)["results"]


def test_kill9_during_rebuild_leaves_a_working_index(
    cfg: Config, workspace: Path, tmp_path: Path
) -> None:
    many(workspace, 300)
    with AgentIndex(cfg) as idx:
        idx.sync()
    before = current_file(cfg.indexPath)  # type: ignore[arg-type]
    script = textwrap.dedent(f"""
        from pathlib import Path
        from indexer.config import Config, ChunkingConfig
        from indexer.engine import AgentIndex
        cfg = Config(workspace=Path({str(workspace)!r}), indexPath=Path({str(cfg.indexPath)!r}),
                     chunking=ChunkingConfig(tokens=64, overlap=8))
        with AgentIndex(cfg) as idx:
            idx.sync()
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ))
    gen_dir = cfg.indexPath.parent  # type: ignore[union-attr]
    try:
        wait_for(lambda: any(".g" in p.name for p in gen_dir.iterdir()), timeout=60, interval=0.01)
    finally:
        proc.send_signal(signal.SIGKILL)  # also when the wait failed: never leave it running
        proc.wait()
    assert current_file(cfg.indexPath) == before  # type: ignore[arg-type]
    with AgentIndex(cfg, readonly=True) as idx:
        assert idx.search("otters", min_score=0)["results"]
        assert idx.store.integrity() == "ok"
    cleanup(cfg.indexPath, grace_s=0)  # type: ignore[arg-type]
    assert not any(".g" in p.name for p in gen_dir.iterdir()), list(gen_dir.iterdir())


def test_a_rebuild_leaves_no_wal_files_beside_the_index_link(cfg: Config, workspace: Path) -> None:
    """The first rebuild replaces the plain index file (generation zero) with a link
    to a generation; its -wal and -shm, named after the path, used to stay beside
    the link for good (nothing opens them by that name again)."""
    index = cfg.indexPath
    assert index is not None
    with AgentIndex(cfg) as idx:
        idx.sync()
        with AgentIndex(cfg, readonly=True) as reader:  # a reader holds them open
            assert reader.search("rye bread")["results"]
            assert Path(f"{index}-wal").exists() or Path(f"{index}-shm").exists()
            assert idx.sync(force=True).rebuilt == "forced"
            assert reader.search("rye bread")["results"]  # it keeps answering
    assert index.is_symlink()
    left = sorted(p.name for p in index.parent.glob(index.name + "-*"))
    assert left == [], left
