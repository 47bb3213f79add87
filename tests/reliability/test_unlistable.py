"""A folder that is there but cannot be read, or a sessions folder gone or replaced:
named, and what was indexed from it kept (a folder that lists nothing is not a folder
emptied). Found from outside: each of these used to drop every file under the folder
from the index, with no skip, no error and ``dirty: false``."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write
from daemon_util import child_env

from indexer.config import Config, SessionsConfig
from indexer.engine import AgentIndex
from indexer.errors import TranscriptsUnavailable

# As root, file modes do not apply: the index runs without the two capabilities that
# let root read any folder (setpriv, util-linux), as an ordinary user would.
_NO_DAC = "--bounding-set=-dac_override,-dac_read_search"


def _as_a_user(*args: str) -> list[str]:
    cmd = [sys.executable, "-m", "indexer.surfaces.cli", *args]
    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root, these tests need setpriv (util-linux) to drop DAC")
    return [setpriv, _NO_DAC, "--inh-caps=-dac_override,-dac_read_search", *cmd]


@pytest.fixture
def closed(tmp_path: Path) -> Iterator[list[Path]]:
    """Folders a test closes (mode 000), opened again afterwards."""
    folders: list[Path] = []
    yield folders
    for f in folders:
        f.chmod(0o755)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """``memindex ARGS`` as a user (see ``_as_a_user``)."""
    return subprocess.run(
        _as_a_user(*args), capture_output=True, text=True, env=child_env(), timeout=60
    )


def _with_a_transcript(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(workspace, sessions folder, config file): MEMORY.md and one transcript about
    a ptarmigan, the index at ``i.sqlite``."""
    ws, sessions = tmp_path / "ws", tmp_path / "sessions"
    write(ws, "MEMORY.md", "# Memory\n- first\n")
    line = {"type": "message", "message": {"role": "user", "content": "the ptarmigan nests"}}
    write(sessions, "s1.jsonl", json.dumps(line) + "\n")
    cfg = write(
        tmp_path,
        "c.toml",
        f'workspace = "{ws}"\nindexPath = "{tmp_path}/i.sqlite"\n[sessions]\ndir = "{sessions}"\n',
    )
    return ws, sessions, cfg


def _index(cfg: Path) -> dict[str, object]:
    done = _run("--config", str(cfg), "index", "--json")
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout)
    return out


def test_a_memory_folder_that_cannot_be_listed_is_named_and_kept(
    tmp_path: Path, closed: list[Path]
) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n- first\n")
    write(ws, "memory/2026-01-01.md", "- heron at the pond\n")
    write(ws, "memory/deep/2026-01-02.md", "- egret in the reeds\n")
    cfg = write(tmp_path, "c.toml", f'workspace = "{ws}"\nindexPath = "{tmp_path}/i.sqlite"\n')
    _index(cfg)
    for folder in (ws / "memory" / "deep", ws / "memory"):
        folder.chmod(0)
        closed.append(folder)
        report = _index(cfg)
        skipped = {str(s["path"]): str(s["reason"]) for s in report["skipped"]}  # type: ignore[attr-defined]
        name = folder.relative_to(ws).as_posix()
        assert skipped[name].startswith("cannot list this folder: Permission denied"), skipped
        assert report["removed"] == 0
        folder.chmod(0o755)
        closed.remove(folder)
        with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite"), readonly=True) as r:
            for word in ("heron", "egret"):
                assert r.search(word, min_score=0)["results"], (name, word)


def test_special_files_under_memory_names_are_named(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n- first\n")
    outside = write(tmp_path, "outside.md", "- not a memory\n")
    (ws / "memory").mkdir()
    os.mkfifo(ws / "memory" / "2026-01-01.md")
    os.symlink(outside, ws / "memory" / "2026-01-02.md")
    os.symlink(outside, ws / "USER.md")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(ws / "memory" / "2026-01-03.md"))
        with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite")) as idx:
            report = idx.sync()
    finally:
        sock.close()
    skipped = {s["path"]: s["reason"] for s in report.skipped}
    assert skipped == {
        "USER.md": "a symlink (not followed)",
        "memory/2026-01-01.md": "a FIFO",
        "memory/2026-01-02.md": "a symlink (not followed)",
        "memory/2026-01-03.md": "a socket",
    }


def test_a_sessions_folder_gone_or_replaced_keeps_its_transcripts(tmp_path: Path) -> None:
    ws, sessions = tmp_path / "ws", tmp_path / "sessions"
    write(ws, "MEMORY.md", "# Memory\n- first\n")
    line = {"type": "message", "message": {"role": "user", "content": "the ptarmigan nests"}}
    write(sessions, "s1.jsonl", json.dumps(line) + "\n")
    cfg = Config(
        workspace=ws,
        indexPath=tmp_path / "i.sqlite",
        sessions=SessionsConfig(dir=str(sessions)),
    )
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert idx.search("ptarmigan", min_score=0)["results"]
        sessions.rename(tmp_path / "away")
        write(tmp_path, "sessions", "a file where the folder was\n")
        for _ in range(2):  # replaced by a file, then gone
            with pytest.raises(TranscriptsUnavailable, match="1 transcript.*kept"):
                idx.sync()
            assert idx.search("ptarmigan", min_score=0)["results"]
            sessions.unlink(missing_ok=True)
        (tmp_path / "away").rename(sessions)
        idx.sync()
        assert idx.search("ptarmigan", min_score=0)["results"]
        (sessions / "s1.jsonl").unlink()  # a transcript deleted from a folder that is there
        idx.sync()
        assert not idx.search("ptarmigan", min_score=0)["results"]


def test_a_sessions_folder_that_cannot_be_listed_is_an_error(
    tmp_path: Path, closed: list[Path]
) -> None:
    ws, sessions, cfg = _with_a_transcript(tmp_path)
    _index(cfg)
    sessions.chmod(0)
    closed.append(sessions)
    done = _run("--config", str(cfg), "index")
    assert done.returncode == 2
    assert "cannot list sessions folder" in done.stderr and "Permission denied" in done.stderr
    assert "1 transcript(s) indexed from it are kept" in done.stderr
    sessions.chmod(0o755)
    closed.remove(sessions)
    with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite"), readonly=True) as r:
        assert r.search("ptarmigan", min_score=0)["results"]


def test_a_workspace_that_cannot_be_listed_is_an_error_and_keeps_everything(
    tmp_path: Path, closed: list[Path]
) -> None:
    """The workspace folder itself closed: every memory file was left out (their rows
    removed) with nothing said. Now the sync fails, saying why, and removes nothing."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n- the heron is back\n")
    write(ws, "memory/2026-01-01.md", "- egret in the reeds\n")
    cfg = write(tmp_path, "c.toml", f'workspace = "{ws}"\nindexPath = "{tmp_path}/i.sqlite"\n')
    _index(cfg)
    ws.chmod(0)
    closed.append(ws)
    done = _run("--config", str(cfg), "index")
    assert done.returncode == 2 and "cannot list the workspace" in done.stderr, done.stderr
    ws.chmod(0o755)
    closed.remove(ws)
    with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite"), readonly=True) as r:
        for word in ("heron", "egret"):
            assert r.search(word, min_score=0)["results"], word


def test_index_force_with_the_sessions_folder_gone_names_what_it_dropped(
    tmp_path: Path,
) -> None:
    """The sessions folder gone, its transcripts kept (and said so); `index --force`
    builds a new generation, which cannot read them again: it dropped them without
    naming the folder."""
    ws, sessions, cfg = _with_a_transcript(tmp_path)
    _index(cfg)
    sessions.rename(tmp_path / "away")
    done = _run("--config", str(cfg), "index", "--force")
    assert done.returncode == 0, done.stderr
    assert f"sessions folder {sessions} is not there" in done.stdout
    assert "dropped the 1 transcript(s)" in done.stdout
