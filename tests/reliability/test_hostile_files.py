"""Reliability round 2, the filesystem side: what an outside attack on a hostile
workspace broke (issue #13), each defect reproduced as it was reported. Numbers in
the test names are the issue's.

Races are made deterministic by doing the swap at the moment the old code was
exposed (right after the check, before the read); test_05b also races for real with
renameat2(RENAME_EXCHANGE)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write
from daemon_util import child_env, run_cli

import indexer.indexing.pipeline as pipeline_mod
import indexer.search.documents as documents_mod
from indexer.config import Config
from indexer.engine import AgentIndex
from indexer.errors import MemindexError, NotFound, PathRefused

pytestmark = pytest.mark.slow

SECRET = "OUTSIDE-SECRET-7731"


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    write(out, "target.md", f"# not yours\n{SECRET} lives here\n")
    return out


def _sessions_cfg(ws: Path, tmp_path: Path) -> Config:
    from dataclasses import replace

    from indexer.config import SessionsConfig

    sdir = tmp_path / "sessions"
    sdir.mkdir(exist_ok=True)
    return replace(
        Config(workspace=ws, indexPath=tmp_path / "index.sqlite"),
        sessions=SessionsConfig(dir=str(sdir)),
    )


def _in_thread(fn: object, timeout: float) -> tuple[bool, object]:
    """Run ``fn`` on a daemon thread; (finished, result or exception)."""
    box: list[object] = []

    def run() -> None:
        try:
            box.append(fn())  # type: ignore[operator]
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            box.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    return (not t.is_alive()), (box[0] if box else None)


def _unblock(fifo: Path) -> None:
    """Release a reader stuck in open() of ``fifo`` (so a failing test ends)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


# -- 2: file names that are not UTF-8 -------------------------------------------------


def test_non_utf8_names_are_skipped_with_a_reason_and_never_block_a_source(
    tmp_path: Path, workspace: Path
) -> None:
    cfg = _sessions_cfg(workspace, tmp_path)
    bad_dir = os.fsencode(workspace / "memory" / "weird")
    os.makedirs(bad_dir)
    with open(os.path.join(bad_dir, b"bad\xff\xfename.md"), "wb") as fh:
        fh.write(b"# bad name\nquokka in a badly named file\n")
    sdir = os.fsencode(tmp_path / "sessions")
    with open(os.path.join(sdir, b"caf\xe9.jsonl"), "wb") as fh:
        fh.write(b'{"type":"message","role":"user","content":"wombat latin1 name"}\n')
    with AgentIndex(cfg) as idx:
        rep = idx.sync()  # raised UnicodeEncodeError and rolled the batch back
        write(workspace, "memory/2026-11-09.md", "- the platypus arrived\n")
        write(
            tmp_path / "sessions",
            "ok.jsonl",
            '{"type":"message","role":"user","content":"echidna in a fine transcript"}\n',
        )
        idx.sync()
        assert idx.search("platypus", min_score=0)["results"], "later files must be indexed"
        assert idx.search("echidna", min_score=0)["results"]
        st = idx.status()
    reasons = {s["path"]: s["reason"] for s in st["skipped"]}
    assert any("UTF-8" in r and "bad\\xff\\xfename.md" in p for p, r in reasons.items()), reasons
    assert any("UTF-8" in r and "caf\\xe9.jsonl" in p for p, r in reasons.items()), reasons
    assert not rep.errors or all("UTF-8" in e["reason"] for e in rep.errors)


def test_cli_index_with_a_non_utf8_name_exits_0(tmp_path: Path, workspace: Path) -> None:
    with open(os.path.join(os.fsencode(workspace / "memory"), b"x\xff.md"), "wb") as fh:
        fh.write(b"numbat\n")
    env = child_env()
    r = run_cli("--workspace", str(workspace), "index", env=env)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "x\\xff.md" in r.stdout + r.stderr


# -- 3 and 4: FIFOs --------------------------------------------------------------------


def test_memory_get_on_a_fifo_transcript_is_refused_at_once(
    tmp_path: Path, workspace: Path
) -> None:
    cfg = _sessions_cfg(workspace, tmp_path)
    fifo = tmp_path / "sessions" / "trap.jsonl"
    os.mkfifo(fifo)
    with AgentIndex(cfg) as idx:
        done, got = _in_thread(lambda: idx.get("sessions/trap.jsonl"), 5.0)
    _unblock(fifo)
    assert done, "memory_get blocked on a FIFO"
    assert isinstance(got, PathRefused) and "FIFO" in got.message, got


def test_cli_get_of_a_fifo_without_daemon_does_not_hang(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "- hello\n")
    sdir = tmp_path / "sessions"
    sdir.mkdir()
    os.mkfifo(sdir / "trap.jsonl")
    conf = write(tmp_path, "c.toml", f'workspace = "{ws}"\n[sessions]\ndir = "{sdir}"\n')
    try:
        run_cli("--config", str(conf), "index", timeout=20)
        r = run_cli("--config", str(conf), "get", "sessions/trap.jsonl", timeout=20)
    finally:
        _unblock(sdir / "trap.jsonl")
    assert r.returncode == 2 and "FIFO" in r.stderr, r.stderr


@pytest.fixture
def swap_after_discovery(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Run the callables put in the yielded list right after discovery has listed the
    files (the moment a sync is exposed to a swap)."""
    actions: list[object] = []
    real = pipeline_mod.discover

    def discover_then_swap(*a: object, **kw: object):  # type: ignore[no-untyped-def]
        files = real(*a, **kw)  # type: ignore[arg-type]
        for act in actions:
            act()  # type: ignore[operator]
        return files

    monkeypatch.setattr(pipeline_mod, "discover", discover_then_swap)
    yield actions


def test_file_replaced_by_a_fifo_mid_sync_never_hangs_the_writer(
    tmp_path: Path, workspace: Path, swap_after_discovery: list[object]
) -> None:
    cfg = Config(workspace=workspace, indexPath=tmp_path / "index.sqlite")
    target = workspace / "memory" / "2026-11-02.md"
    with AgentIndex(cfg) as idx:
        idx.sync()
        write(workspace, "memory/2026-11-02.md", "# changed\n- now a fifo soon\n")

        def to_fifo() -> None:
            target.unlink()
            os.mkfifo(target)

        swap_after_discovery.append(to_fifo)
        done, got = _in_thread(idx.sync, 10.0)
        _unblock(target)
        assert done, "the sync blocked opening a FIFO"
        assert not isinstance(got, BaseException), got
        assert any("FIFO" in s["reason"] for s in idx.status()["skipped"])


def test_transcript_replaced_by_a_fifo_mid_sync(tmp_path: Path, workspace: Path) -> None:
    cfg = _sessions_cfg(workspace, tmp_path)
    t = write(
        tmp_path / "sessions",
        "a.jsonl",
        '{"type":"message","role":"user","content":"first line"}\n',
    )
    with AgentIndex(cfg) as idx:
        idx.sync()
        with open(t, "a") as fh:
            fh.write('{"type":"message","role":"user","content":"second line"}\n')
        import indexer.indexing.transcripts.session_files as ss

        real = ss.list_transcripts

        def listed_then_swapped(*a: object, **kw: object):  # type: ignore[no-untyped-def]
            files = real(*a, **kw)  # type: ignore[arg-type]
            t.unlink()
            os.mkfifo(t)
            return files

        ss.list_transcripts = listed_then_swapped  # type: ignore[assignment]
        try:
            done, got = _in_thread(lambda: idx.sync_sessions(due_only=False), 10.0)
        finally:
            ss.list_transcripts = real  # type: ignore[assignment]
            _unblock(t)
        assert done, "the transcript sync blocked on a FIFO"
        assert not isinstance(got, BaseException), got


# -- 5: symlink races ----------------------------------------------------------------------


def test_memory_get_never_follows_a_directory_swapped_after_the_check(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _outside(tmp_path)
    race = workspace / "memory" / "race"
    write(race, "target.md", "# mine\nharmless\n")
    real = documents_mod.resolve_get_path

    def check_then_swap(cfg: Config, raw: str):  # type: ignore[no-untyped-def]
        got = real(cfg, raw)
        os.rename(race, tmp_path / "race.away")
        os.symlink(out, race)  # the check passed; now the directory is a link outside
        return got

    monkeypatch.setattr(documents_mod, "resolve_get_path", check_then_swap)
    cfg = Config(workspace=workspace, indexPath=tmp_path / "index.sqlite")
    with AgentIndex(cfg) as idx, pytest.raises((PathRefused, NotFound)):
        res = idx.get("memory/race/target.md")
        assert SECRET not in res["text"]


def test_sync_never_indexes_a_directory_swapped_for_a_symlink(
    tmp_path: Path, workspace: Path, swap_after_discovery: list[object]
) -> None:
    out = _outside(tmp_path)
    race = workspace / "memory" / ".r_link"
    write(race, "target.md", "# mine\nharmless\n")

    def swap() -> None:
        os.rename(race, tmp_path / "r.away")
        os.symlink(out, race)

    swap_after_discovery.append(swap)
    cfg = Config(workspace=workspace, indexPath=tmp_path / "index.sqlite")
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert not idx.search(SECRET, min_score=0)["results"]
    raw = (tmp_path / "index.sqlite").read_bytes()
    assert SECRET.encode() not in raw


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd = -100
    rc = libc.renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if rc != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def test_real_race_with_rename_exchange(tmp_path: Path, workspace: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("renameat2(RENAME_EXCHANGE) is Linux's")
    out = _outside(tmp_path)
    race = workspace / "memory" / "race"
    write(race, "target.md", "# mine\nharmless\n")
    link = workspace / "memory" / "race-link"
    os.symlink(out, link)
    try:
        _exchange(race, link)
        _exchange(race, link)
    except OSError as exc:
        if exc.errno in (errno.ENOSYS, errno.EINVAL):
            pytest.skip("this kernel or filesystem has no RENAME_EXCHANGE")
        raise
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            _exchange(race, link)

    cfg = Config(workspace=workspace, indexPath=tmp_path / "index.sqlite")
    flipper = threading.Thread(target=flip, daemon=True)
    leaked = 0
    calls = 0
    with AgentIndex(cfg) as idx:
        flipper.start()
        deadline = time.monotonic() + 1.5
        try:
            while time.monotonic() < deadline:
                calls += 1
                with contextlib.suppress(MemindexError):
                    leaked += SECRET in idx.get("memory/race/target.md")["text"]
        finally:
            stop.set()
            flipper.join()
    assert calls > 50 and leaked == 0, (calls, leaked)


# -- 6: memindex-qmd get -----------------------------------------------------------------


def _qmd(home: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = child_env()
    env["XDG_CONFIG_HOME"] = str(home / "config")
    env["XDG_CACHE_HOME"] = str(home / "cache")
    env["MEMINDEX_QMD_NO_DAEMON"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "indexer.surfaces.qmd", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_qmd_get_applies_the_path_rules(tmp_path: Path) -> None:
    coll = tmp_path / "notes"
    write(coll, "ok.md", "one\ntwo\n")
    write(coll, "notes.txt", "not markdown\n")
    write(coll, "node_modules/pkg/readme.md", "ignored dir\n")
    out = _outside(tmp_path)
    os.symlink(out / "target.md", coll / "passwd.md")
    os.symlink("/dev/zero", coll / "zero.md")
    os.mkfifo(coll / "pipe.md")
    home = tmp_path / "h"
    assert _qmd(home, "collection", "add", str(coll), "--name", "n").returncode == 0
    good = _qmd(home, "get", "n/ok.md")
    assert good.returncode == 0 and good.stdout == "1: one\n2: two\n", good.stdout
    assert _qmd(home, "get", "n/ok.md:2:1").stdout == "2: two\n"
    try:
        for target in (
            "n/passwd.md",
            "n/notes.txt",
            "n/node_modules/pkg/readme.md",
            "n/zero.md",
            "n/pipe.md",
            "n/ok.md:0:1",
            "n/../outside/target.md",
        ):
            r = _qmd(home, "get", target, timeout=20)
            assert r.returncode != 0, (target, r.stdout[:200])
            assert SECRET not in r.stdout and "Traceback" not in r.stderr, target
    finally:
        _unblock(coll / "pipe.md")


# -- 8: memory_get on transcripts ----------------------------------------------------------


def test_one_bad_line_spoils_only_itself(tmp_path: Path, workspace: Path) -> None:
    cfg = _sessions_cfg(workspace, tmp_path)
    lines = [
        b'{"type":"message","role":"user","content":"first fine"}',
        b'{"type":"message","role":"user","content":"caf\xe9 latin1"}',
        b'{"type":"message","role":"user","content":"nul \x00 byte"}',
        b'{"type":"message","role":"user","content":"fourth fine"}',
    ]
    (tmp_path / "sessions" / "t.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with AgentIndex(cfg) as idx:
        idx.sync()
        got = idx.get("sessions/t.jsonl", start=4, lines=1)
        assert "fourth fine" in got["text"] and got["totalLines"] == 4
        whole = idx.get("sessions/t.jsonl")
        assert whole["lines"] == 4 and "first fine" in whole["text"]


def test_a_transcript_over_64_mib_is_readable_at_a_cited_line(
    tmp_path: Path, workspace: Path
) -> None:
    cfg = _sessions_cfg(workspace, tmp_path)
    filler = b'{"type":"message","role":"user","content":"' + b"x" * 1000 + b'"}\n'
    path = tmp_path / "sessions" / "big.jsonl"
    n = 70 * 1024 * 1024 // len(filler) + 1
    with open(path, "wb") as fh:
        for _ in range(n // 1000):
            fh.write(filler * 1000)
        fh.write(filler * (n % 1000))
        fh.write(b'{"type":"message","role":"user","content":"the last word"}\n')
    with AgentIndex(cfg) as idx:
        got = idx.get("sessions/big.jsonl", start=n + 1, lines=1)
    assert "the last word" in got["text"] and got["totalLines"] == n + 1


# -- 9: a very deep tree ---------------------------------------------------------------------


@pytest.fixture
def deep_tree(workspace: Path) -> Iterator[Path]:
    """memory/d/d/…/d (1,000 levels) with bottom.md at the end, made and removed
    through descriptors (os.makedirs and shutil.rmtree recurse and would fail)."""
    top = workspace / "memory"
    fds = [os.open(top, os.O_RDONLY | os.O_DIRECTORY)]
    for _ in range(1000):
        os.mkdir("d", dir_fd=fds[-1])
        fds.append(os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
    fd = os.open("bottom.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fds[-1])
    os.write(fd, b"bottom of the pit\n")
    os.close(fd)
    yield top / "d"
    for name in ("bottom.md", "shallow.md"):
        for d in (fds[-1], fds[1]):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=d)
    while len(fds) > 1:
        os.close(fds.pop())
        os.rmdir("d", dir_fd=fds[-1])
    os.close(fds[0])


def test_a_tree_1000_levels_deep_is_skipped_with_a_reason(
    tmp_path: Path, workspace: Path, deep_tree: Path
) -> None:
    write(workspace, "memory/d/shallow.md", "- the axolotl is shallow\n")
    cfg = Config(workspace=workspace, indexPath=tmp_path / "index.sqlite")
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert idx.search("axolotl", min_score=0)["results"]
        assert not idx.search("pit", min_score=0)["results"]
        assert any("deeper than" in s["reason"] for s in idx.status()["skipped"])


# -- 14: a symlinked transcript ---------------------------------------------------------------


def test_symlinked_transcript_is_refused_not_an_internal_error(
    tmp_path: Path, workspace: Path
) -> None:
    cfg = _sessions_cfg(workspace, tmp_path)
    real = write(tmp_path, "elsewhere.jsonl", '{"type":"message","role":"user","content":"x"}\n')
    os.symlink(real, tmp_path / "sessions" / "link.jsonl")
    with AgentIndex(cfg) as idx, pytest.raises(PathRefused) as info:
        idx.get("sessions/link.jsonl")
    assert info.value.code == "path_refused" and "symlink" in info.value.message


# -- 17: file modes and the command line ---------------------------------------------------------


def test_index_files_and_directories_are_private(tmp_path: Path, workspace: Path) -> None:
    state = tmp_path / "state"
    r = run_cli(
        "--workspace",
        str(workspace),
        "--agent",
        "a1",
        "index",
        env={**child_env(), "XDG_STATE_HOME": str(state)},
    )
    assert r.returncode == 0, r.stderr
    d = state / "memindex"
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    files = [p for p in d.iterdir() if ".sqlite" in p.name and not p.is_symlink()]
    assert files
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


def test_qmd_cache_is_private(tmp_path: Path) -> None:
    coll = tmp_path / "notes"
    write(coll, "a.md", "- hello\n")
    home = tmp_path / "h"
    assert _qmd(home, "collection", "add", str(coll), "--name", "n").returncode == 0
    assert _qmd(home, "update").returncode == 0
    cache = home / "cache"
    for d in (cache / "memindex-qmd", cache / "qmd", home / "config" / "memindex-qmd"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    for f in (cache / "memindex-qmd" / "index.sqlite", cache / "qmd" / "index.sqlite"):
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, f


def test_agent_id_cannot_leave_the_state_dir(tmp_path: Path, workspace: Path) -> None:
    r = run_cli("--workspace", str(workspace), "--agent", "../../x", "index")
    assert r.returncode == 2 and "agent" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.sqlite").exists()


def test_search_into_a_closed_pipe_is_quiet(tmp_path: Path, workspace: Path) -> None:
    many = "".join(f"- walrus note {i}\n" for i in range(400))
    write(workspace, "memory/many.md", many)
    assert run_cli("--workspace", str(workspace), "index").returncode == 0
    cmd = (
        f"{sys.executable} -m indexer.surfaces.cli --workspace {workspace} search walrus "
        "--max-results 50 --min-score 0 | head -1"
    )
    r = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {cmd}"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stderr


def test_refusals_name_the_file(tmp_path: Path, workspace: Path) -> None:
    os.mkfifo(workspace / "memory" / "pipe.md")
    cfg = Config(workspace=workspace, indexPath=tmp_path / "index.sqlite")
    with AgentIndex(cfg) as idx:
        with pytest.raises(PathRefused) as refused:
            idx.get("memory/pipe.md")
        assert refused.value.message == "memory/pipe.md: a FIFO"
        with pytest.raises(NotFound) as missing:
            idx.get("memory/gone.md")
        assert missing.value.message.startswith("memory/gone.md")


def test_extra_paths_that_add_nothing_are_listed_with_the_reason(
    tmp_path: Path, workspace: Path
) -> None:
    """A typo or an odd file in ``extraPaths`` used to index nothing without a word
    (the code said "reported by status"; nothing reported it)."""
    from indexer.config import ExtraPath

    os.mkfifo(tmp_path / "pipe.md")
    write(tmp_path, "notes.txt", "not markdown")
    missing = tmp_path / "no-such-notes"
    extras = [missing, tmp_path / "pipe.md", Path("/dev/null"), tmp_path / "notes.txt"]
    cfg = Config(
        workspace=workspace,
        indexPath=tmp_path / "index.sqlite",
        extraPaths=tuple(ExtraPath(p) for p in extras),
    )
    with AgentIndex(cfg) as idx:
        idx.sync()
        why = {s["path"]: s["reason"] for s in idx.status()["skipped"]}
        assert why == {
            str(missing): "extra path does not exist",
            str(
                tmp_path / "pipe.md"
            ): "extra path is not a folder or a regular file (a FIFO or device)",
            "/dev/null": "extra path is not a folder or a regular file (a FIFO or device)",
            str(tmp_path / "notes.txt"): "extra path is not a folder or a .md file",
        }
        write(missing, "found.md", "- the okapi note\n")  # fixed: indexed, no longer listed
        idx.sync()
        assert str(missing) not in {s["path"] for s in idx.status()["skipped"]}
        assert (
            idx.search("okapi", min_score=0)["results"][0]["path"] == "extra/no-such-notes/found.md"
        )


def test_an_extra_path_glob_that_can_match_nothing_is_named(
    tmp_path: Path, workspace: Path
) -> None:
    """A glob leaving the folder, or whose last part is a plain name that is no .md
    file, was accepted and indexed nothing without a word."""
    from indexer.config import ExtraPath

    notes = tmp_path / "notes"
    write(notes, "a.md", "- the okapi note\n")
    patterns = ("../x/*.md", "/abs/*.md", "[", "*.txt", "**/*.md", "a.md", "n[ao]tes/*", "*.M?")
    cfg = Config(
        workspace=workspace,
        indexPath=tmp_path / "index.sqlite",
        extraPaths=tuple(ExtraPath(notes, p) for p in patterns),
    )
    with AgentIndex(cfg) as idx:
        report = idx.sync()
    why = sorted(s["reason"] for s in report.skipped if s["path"] == str(notes))
    assert len(why) == 4, why
    assert sum("leaves the folder" in w for w in why) == 2
    assert sum("can match no .md file" in w for w in why) == 2


def test_a_hard_link_to_an_outside_file_is_neither_indexed_nor_served(
    tmp_path: Path, workspace: Path
) -> None:
    """A hard link (or, as root, a bind mount) makes an outside file look like one of
    the workspace's: no symlink check sees it. A file with more than one name is
    skipped (status says why) and refused by memory_get and memindex-qmd get,
    unless ``limits.allowHardLinks`` says otherwise."""
    out = _outside(tmp_path)
    os.link(out / "target.md", workspace / "memory" / "linked.md")
    cfg = _sessions_cfg(workspace, tmp_path)
    transcript = tmp_path / "elsewhere.jsonl"
    transcript.write_text(
        '{"type":"message","role":"user","content":"' + SECRET + ' in a transcript"}\n'
    )
    os.link(transcript, tmp_path / "sessions" / "linked.jsonl")
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert idx.search(SECRET, min_score=0)["results"] == []
        skipped = {s["path"]: s["reason"] for s in idx.status()["skipped"]}
        assert "hard link" in skipped["memory/linked.md"], skipped
        assert "allowHardLinks" in skipped["sessions/linked.jsonl"], skipped
        for path in ("memory/linked.md", "sessions/linked.jsonl"):
            with pytest.raises(PathRefused, match="hard link"):
                idx.get(path)
    home = tmp_path / "h"
    assert _qmd(home, "collection", "add", str(workspace / "memory"), "--name", "m").returncode == 0
    r = _qmd(home, "get", "m/linked.md")
    assert r.returncode != 0 and SECRET not in r.stdout and "hard link" in r.stderr, r.stderr
    from dataclasses import replace

    from indexer.config import LimitsConfig

    allowed = replace(cfg, limits=LimitsConfig(allowHardLinks=True))
    with AgentIndex(allowed) as idx:  # the user said so: indexed and served
        idx.sync()
        found = {r["path"] for r in idx.search(SECRET, min_score=0)["results"]}
        assert found == {"memory/linked.md", "sessions/linked.jsonl"}
        assert SECRET in idx.get("memory/linked.md")["text"]


@pytest.mark.skipif(os.geteuid() != 0, reason="a read-only bind mount needs root")
def test_an_index_on_a_read_only_file_system_can_be_searched(
    tmp_path: Path, workspace: Path
) -> None:
    """A backup mounted read-only, a container's read-only volume: SQLite cannot
    make the WAL index file (-shm) beside it, and opening it even to search failed
    with "unable to open database file"."""
    state, ro = tmp_path / "state", tmp_path / "ro"
    ro.mkdir()
    cfg = Config(workspace=workspace, indexPath=state / "main.sqlite")
    with AgentIndex(cfg) as idx:
        idx.sync()
    subprocess.run(["mount", "--bind", str(state), str(ro)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
        conf = write(
            tmp_path, "ro.toml", f'workspace = "{workspace}"\nindexPath = "{ro}/main.sqlite"\n'
        )
        r = run_cli("--config", str(conf), "search", "rye bread")
        assert r.returncode == 0 and "MEMORY.md" in r.stdout, r.stderr
        r = run_cli("--config", str(conf), "status")
        assert r.returncode == 0 and "last sync" in r.stdout, r.stderr
        r = run_cli("--config", str(conf), "index")
        assert r.returncode == 2 and "Read-only file system" in r.stderr, r.stderr
        assert "can be searched, not updated" in r.stderr and "Traceback" not in r.stderr
    finally:
        subprocess.run(["umount", str(ro)], check=False)
