"""Faults of the machine: disk full, a watched directory deleted and recreated,
clocks that jump. (Provider faults: test_openai_provider.py; the inotify limit:
test_agents_watcher.py; kills: test_crash.py.)"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write
from daemon_util import (
    DaemonProc,
    child_env,
    daemon_config,
    heron_daemon,
    rpc,
    run_cli,
    search_paths,
    wait_for,
)

from indexer.config import Config
from indexer.engine import AgentIndex
from indexer.store import Store

pytestmark = pytest.mark.slow


def _many_files(ws: Path, n: int, tag: str = "") -> None:
    for i in range(n):
        body = "\n".join(
            f"- {tag}note {j} of file {i} about topic{(i + j) % 53}" for j in range(40)
        )
        write(ws, f"memory/2025-{i:04d}.md", f"# File {i}\n\n{body}\n")


def _index_cli(cfg: Path, fsize: int | None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if fsize is not None:  # the disk "fills up" at fsize bytes per file
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return run_cli("--config", str(cfg), "index", timeout=120, preexec_fn=limit)


def test_disk_full_is_a_clear_error_and_corrupts_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _many_files(ws, 150)
    index = tmp_path / "idx" / "main.sqlite"
    cfg = write(tmp_path, "c.toml", f'workspace = "{ws}"\nindexPath = "{index}"\n')
    first = _index_cli(cfg, None)
    assert first.returncode == 0, first.stderr
    _many_files(ws, 600, tag="grown ")  # much more text than the disk has room for
    full = _index_cli(cfg, 2 * 1024 * 1024)
    assert full.returncode != 0
    msg = full.stderr.lower()
    assert "traceback" not in msg and ("full" in msg or "too large" in msg or "space" in msg), msg
    with Store(index, readonly=True) as s:  # what was committed is intact
        assert s.consistency() == []
    again = _index_cli(cfg, None)  # room again: it converges
    assert again.returncode == 0, again.stderr
    clean = tmp_path / "clean.sqlite"
    with AgentIndex(Config(workspace=ws, indexPath=clean)) as idx:
        idx.sync()
    with Store(index, readonly=True) as a, Store(clean, readonly=True) as b:
        q = "SELECT path, start_line, end_line, hash FROM chunks ORDER BY 1, 2"
        assert a.db.execute(q).fetchall() == b.db.execute(q).fetchall()
        assert a.consistency() == []


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    d = heron_daemon(tmp_path)
    yield d
    d.stop()


def _search(d: DaemonProc, q: str) -> list[str]:
    return search_paths(d.sock, q, minScore=0)


def test_an_index_file_deleted_under_the_daemon_is_built_again(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    """Someone clears the state folder while the daemon runs. Before, the daemon went
    on writing into the deleted file: a search on a connection opened after the
    deletion said "run 'memindex index' first" (`memindex index`, answered by the
    daemon, did not help), and the next start had lost everything."""
    index = Path(rpc(daemon.sock, "status")["indexPath"])
    assert _search(daemon, "heron") == ["memory/2026-01-01.md"]
    for n in range(12):  # history: the old index's change feed runs ahead of a new one's
        write(tmp_path / "ws", "memory/2026-01-05.md", f"- egret count {n}\n")
        wait_for(lambda n=n: _search(daemon, f"egret count {n}") != [], timeout=30)
    gone = list(index.parent.glob(index.name.removesuffix(".sqlite") + "*"))
    assert index in gone
    before = rpc(daemon.sock, "status")["lastSync"]
    for f in gone:
        f.unlink()

    def built_again() -> bool:
        st = rpc(daemon.sock, "status")
        return index.is_file() and st["lastSync"] != before and not st["dirty"]

    wait_for(built_again, timeout=30)  # then a note is written
    write(tmp_path / "ws", "memory/2026-02-02.md", "- kingfisher at the new pond\n")
    # The daemon's in-memory copy of the old file was taken for the new one (same
    # path): it caught up from the new file's change feed at the old one's place,
    # so nothing written after the deletion was ever found while status said current.
    wait_for(lambda: _search(daemon, "kingfisher") == ["memory/2026-02-02.md"], timeout=30)
    assert _search(daemon, "heron") == ["memory/2026-01-01.md"]  # everything read again
    st = rpc(daemon.sock, "status")
    assert index.is_file() and st["errors"]["memory"] is None and st["files"] == 4, st
    fds = Path(f"/proc/{daemon.proc.pid}/fd")
    if fds.is_dir():  # Linux: no connection keeps the deleted file (and its disk space)
        held = [os.readlink(f) for f in fds.iterdir() if f.is_symlink()]
        assert not [h for h in held if h.endswith(" (deleted)") and index.name in h]


def test_a_change_no_event_announced_is_found_by_the_rescan(tmp_path: Path) -> None:
    """A file changed through a hard link outside the workspace: inotify tells only
    the watchers of the directory the write went through, so the daemon hears
    nothing (as when the kernel drops events on a queue overflow). The periodic
    rescan (``sync.rescanMs``) finds it; before it existed, never. (Hard links are
    indexed only when ``limits.allowHardLinks`` says so.)"""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n- first\n")
    note = write(ws, "memory/2026-01-01.md", "- heron sighting at the pond\n")
    link = tmp_path / "elsewhere" / "note.md"
    link.parent.mkdir()
    os.link(note, link)
    (tmp_path / "sessions").mkdir()
    extra = '[sync]\nwatchDebounceMs = 100\nwatcher = "inotify"\nrescanMs = 1500\n'
    extra += "[limits]\nallowHardLinks = true\n"
    cfg = daemon_config(tmp_path, ws, tmp_path / "sessions", extra=extra)
    d = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env()).start()
    try:
        assert rpc(d.sock, "status")["daemon"]["watcher"]["backend"] == "inotify"
        with open(link, "r+", encoding="utf-8") as f:  # the same inode, another directory
            f.write("- kingfisher at the pond\n")
            f.truncate()
        wait_for(lambda: _search(d, "kingfisher") == ["memory/2026-01-01.md"], timeout=30)
        assert _search(d, "heron") == []
    finally:
        d.stop()


def test_watched_directory_deleted_and_recreated(daemon: DaemonProc, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert _search(daemon, "heron") == ["memory/2026-01-01.md"]

    def watched() -> int:
        return int(rpc(daemon.sock, "status")["daemon"]["watcher"]["watchedDirs"])

    before = watched()
    for f in (ws / "memory").iterdir():
        f.unlink()
    (ws / "memory").rmdir()
    wait_for(lambda: _search(daemon, "heron") == [])
    write(ws, "memory/2026-02-02.md", "- kingfisher at the new pond\n")
    wait_for(lambda: _search(daemon, "kingfisher") == ["memory/2026-02-02.md"], timeout=30)
    # ...and the new directory is watched again: a later edit arrives too.
    wait_for(lambda: watched() == before, timeout=30)
    write(ws, "memory/2026-02-03.md", "- egret on the bank\n")
    wait_for(lambda: _search(daemon, "egret") == ["memory/2026-02-03.md"], timeout=30)


def test_a_directory_deleted_and_made_again_at_once_is_watched_again(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    """`rm -rf memory && mkdir memory` (a checkout, rsync): the new directory often
    gets the old one's inode number, and its watch was kept as if alive, so new logs
    waited for the rescan (never, with rescanMs 0) while status was clean. Within a
    few seconds, well before the daemon's 30-second look at its watches."""
    import shutil

    ws = tmp_path / "ws"
    assert _search(daemon, "heron") == ["memory/2026-01-01.md"]
    shutil.rmtree(ws / "memory")
    (ws / "memory").mkdir()
    write(ws, "memory/2026-02-02.md", "- kingfisher at the new pond\n")
    wait_for(lambda: _search(daemon, "kingfisher") == ["memory/2026-02-02.md"], timeout=8)
    write(ws, "memory/2026-02-03.md", "- egret on the bank\n")  # the watch, not a sync
    wait_for(lambda: _search(daemon, "egret") == ["memory/2026-02-03.md"], timeout=8)
    assert _search(daemon, "heron") == []


def _extra_daemon(tmp_path: Path, notes: Path) -> DaemonProc:
    """A daemon on a workspace and the extra folder ``notes`` (one note, about a
    pelican), watching with no rescan: only its watches can see a change."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n- first\n")
    write(notes, "a.md", "- the pelican on the pier\n")
    (tmp_path / "sessions").mkdir()
    sync = "[sync]\nwatchDebounceMs = 100\nrescanMs = 0\n"
    cfg = daemon_config(tmp_path, ws, tmp_path / "sessions", extra=sync)
    cfg.write_text(f'extraPaths = ["{notes}"]\n' + cfg.read_text())
    return DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env()).start()


def test_an_extra_folder_moved_away_and_back_is_watched_again(tmp_path: Path) -> None:
    """Nothing watched the folder an extra path is in: moved away, its notes stayed
    searchable; moved back, nothing of it was indexed again until the rescan."""
    notes = tmp_path / "notes"
    d = _extra_daemon(tmp_path, notes)
    try:
        assert _search(d, "pelican") == ["extra/notes/a.md"]
        notes.rename(tmp_path / "away")
        wait_for(lambda: _search(d, "pelican") == [], timeout=8)
        (tmp_path / "away").rename(notes)
        write(notes, "b.md", "- a cormorant drying its wings\n")
        wait_for(lambda: _search(d, "cormorant") == ["extra/notes/b.md"], timeout=8)
        assert _search(d, "pelican") == ["extra/notes/a.md"]
    finally:
        d.stop()


def test_the_folder_holding_an_extra_path_deleted_and_made_again_is_watched(
    tmp_path: Path,
) -> None:
    """`rm -rf box; sleep; mkdir -p box/notes`: while box was gone nothing watched for
    it, so the new notes waited for the rescan."""
    import shutil

    box = tmp_path / "box"
    d = _extra_daemon(tmp_path, box / "notes")
    try:
        assert _search(d, "pelican") == ["extra/notes/a.md"]
        shutil.rmtree(box)
        wait_for(lambda: _search(d, "pelican") == [], timeout=8)
        time.sleep(1.0)  # gone for a while, then made again
        write(box / "notes", "b.md", "- a cormorant drying its wings\n")
        wait_for(lambda: _search(d, "cormorant") == ["extra/notes/b.md"], timeout=8)
    finally:
        d.stop()


def test_a_workspace_moved_away_is_said_at_once(daemon: DaemonProc, tmp_path: Path) -> None:
    """The workspace renamed away: status was clean until a sync ran into it (a
    search said "workspace does not exist" meanwhile)."""
    ws = tmp_path / "ws"
    ws.rename(tmp_path / "ws.away")
    st = rpc(daemon.sock, "status")
    assert st["dirty"] and "workspace" in str(st["lastError"]), st
    (tmp_path / "ws.away").rename(ws)
    wait_for(lambda: not rpc(daemon.sock, "status")["dirty"], timeout=30)
    assert _search(daemon, "heron") == ["memory/2026-01-01.md"]


def test_clock_jumps_and_restored_mtimes_are_not_missed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    f = write(ws, "memory/notes.md", "- alpha one\n")
    cfg = Config(workspace=ws, indexPath=tmp_path / "i.sqlite")
    future = 4_102_444_800  # 2100-01-01: a clock that ran ahead
    os.utime(f, (future, future))
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert idx.search("alpha", min_score=0)["results"]
        # Same size, and the mtime put back to what it was (a restore, touch -r, a
        # clock jumping back): the change is still seen.
        f.write_text("- gamma one\n")
        os.utime(f, (future, future))
        idx.sync()
        assert idx.search("gamma", min_score=0)["results"]
        assert not idx.search("alpha", min_score=0)["results"]
        f.write_text("- delta one\n")
        os.utime(f, (0, 0))  # and to 1970
        idx.sync()
        assert idx.search("delta", min_score=0)["results"]
        assert idx.store.consistency() == []


# -- a damaged index file ------------------------------------------------------------


def _damaged_setup(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with enough text for the chunks table to span leaf pages, and a
    config whose index is ``idx/main.sqlite``, built by ``memindex index``."""
    ws = tmp_path / "ws"
    _many_files(ws, 30)
    write(ws, "memory/2026-03-03.md", "- the ptarmigan nests above the tree line\n")
    (tmp_path / "sessions").mkdir()
    index = tmp_path / "idx" / "main.sqlite"
    cfg = write(
        tmp_path,
        "c.toml",
        f'workspace = "{ws}"\nindexPath = "{index}"\n[sessions]\ndir = "{tmp_path}/sessions"\n'
        "[sync]\nwatchDebounceMs = 100\n",
    )
    done = run_cli("--config", str(cfg), "index")
    assert done.returncode == 0, done.stderr
    return cfg, index


def _damage(index: Path, how: str) -> bytes:
    """Damage the index the way a failing disk or a bad copy does; its new bytes."""
    with Store(index) as s:
        s.checkpoint()  # every page in the main file, the WAL empty
        size = int(s.db.execute("PRAGMA page_size").fetchone()[0])
        leaves = [
            int(p)
            for (p,) in s.db.execute(
                "SELECT pageno FROM dbstat WHERE name='chunks' AND pagetype='leaf'"
            )
        ]
    real = Path(os.path.realpath(index))
    if how == "garbage":
        real.write_bytes(os.urandom(64 * 1024))
    else:
        spots = [(100, 3000)] if how == "schema" else [((p - 1) * size, size) for p in leaves]
        assert spots, "the chunks table has no leaf pages to damage"
        with open(real, "r+b") as f:
            for at, n in spots:
                f.seek(at)
                f.write(os.urandom(n))
    return real.read_bytes()


@pytest.mark.parametrize("how", ["garbage", "schema"])
def test_a_damaged_index_is_a_clear_error_then_set_aside_and_rebuilt(
    tmp_path: Path, how: str
) -> None:
    cfg, index = _damaged_setup(tmp_path)
    damaged = _damage(index, how)
    found = run_cli("--config", str(cfg), "search", "ptarmigan")
    assert found.returncode == 2
    assert "damaged" in found.stderr and "memindex index" in found.stderr, found.stderr
    assert "FTS5" not in found.stderr and "internal error" not in found.stderr, found.stderr
    fixed = run_cli("--config", str(cfg), "index")
    assert fixed.returncode == 0, fixed.stderr
    assert "kept it as" in fixed.stderr, fixed.stderr
    found = run_cli("--config", str(cfg), "search", "ptarmigan")
    assert found.returncode == 0 and "2026-03-03.md" in found.stdout, found.stderr
    st = json.loads(run_cli("--config", str(cfg), "status", "--json").stdout)
    kept = Path(st["recovered"]["keptAs"])
    assert kept.parent == index.parent and kept.read_bytes() == damaged  # nothing lost
    assert "recovered:" in run_cli("--config", str(cfg), "status").stdout
    with Store(index, readonly=True) as s:
        assert s.consistency() == []


def test_a_daemon_starts_over_a_damaged_index_instead_of_exiting(tmp_path: Path) -> None:
    cfg, index = _damaged_setup(tmp_path)
    _damage(index, "garbage")
    d = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env()).start()
    try:
        wait_for(lambda: _search(d, "ptarmigan") == ["memory/2026-03-03.md"], timeout=60)
        st = rpc(d.sock, "status")
        assert st["recovered"]["keptAs"].startswith(str(index.parent))
        assert st["lastError"] is None and not st["dirty"]
    finally:
        d.stop()


def test_a_daemon_rebuilds_an_index_whose_rows_are_damaged(tmp_path: Path) -> None:
    """The file opens (header and schema intact) but the chunks' pages are garbage:
    the first search that reads them is told so (not "internal error"), and the
    daemon rebuilds the index from the files on its own."""
    cfg, index = _damaged_setup(tmp_path)
    _damage(index, "rows")
    d = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env()).start()
    try:
        answers: list[str] = []

        def answered() -> bool:
            try:
                hits = _search(d, "ptarmigan")
            except RuntimeError as exc:  # the JSON-RPC error, until the rebuild lands
                answers.append(str(exc))
                return False
            return hits == ["memory/2026-03-03.md"]

        wait_for(answered, timeout=60)
        assert all("index_corrupt" in a for a in answers), answers
        wait_for(lambda: rpc(d.sock, "status")["lastError"] is None, timeout=30)
        with Store(index, readonly=True) as s:
            assert s.consistency() == []
    finally:
        d.stop()


def test_a_daemon_rebuilds_an_index_damaged_under_it(tmp_path: Path) -> None:
    """Every page past the first overwritten while the daemon runs (its connections
    opened the file before): the sync that finds it cannot even read the index's
    settings. Before, the forced rebuild it queued read them first and failed the
    same way, again and again: search, status and `memindex index --force` said
    "damaged" until a restart. Now the damage is the rebuild's reason."""
    cfg, index = _damaged_setup(tmp_path)
    d = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env()).start()
    try:
        assert _search(d, "ptarmigan") == ["memory/2026-03-03.md"]
        real = Path(os.path.realpath(index))
        size = real.stat().st_size
        with open(real, "r+b") as f:
            f.seek(4096)
            f.write(b"\xaa" * (size - 4096))
        write(tmp_path / "ws", "memory/2026-04-04.md", "- a snow bunting by the cairn\n")

        def answered() -> bool:
            try:
                return _search(d, "bunting") == ["memory/2026-04-04.md"]
            except RuntimeError:  # the JSON-RPC error, until the rebuild lands
                return False

        wait_for(answered, timeout=60)
        assert _search(d, "ptarmigan") == ["memory/2026-03-03.md"]
        wait_for(lambda: rpc(d.sock, "status")["lastError"] is None, timeout=30)
    finally:
        d.stop()


def test_the_folder_holding_an_extra_path_moved_away_takes_its_notes_out(
    tmp_path: Path,
) -> None:
    """`mv box box2` with the extra path box/notes: its folders' watches moved with
    it and nothing saw it go, so its notes stayed searchable until the rescan."""
    box = tmp_path / "box"
    d = _extra_daemon(tmp_path, box / "notes")
    try:
        assert _search(d, "pelican") == ["extra/notes/a.md"]
        box.rename(tmp_path / "box2")
        wait_for(lambda: _search(d, "pelican") == [], timeout=8)
        (tmp_path / "box2").rename(box)
        wait_for(lambda: _search(d, "pelican") == ["extra/notes/a.md"], timeout=8)
    finally:
        d.stop()
