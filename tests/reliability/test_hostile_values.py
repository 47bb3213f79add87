"""Reliability round 3: values a store cannot hold. Each was found failing a whole
sync on PostgreSQL (and the surrogate on SQLite too), so one hostile file or
transcript line kept every other file out of the index:

- a path longer than a btree can index (PostgreSQL: ~2.7 kB);
- a transcript line whose JSON holds ``\\u0000`` (PostgreSQL's text refuses NUL);
- a transcript line whose JSON holds half a surrogate pair (``\\ud83d``: an emoji
  a tool cut in two), which is not encodable as UTF-8 at all.

Both stores run every test: the answer must not depend on the store."""

from __future__ import annotations

import json
import random
import string
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import SQLITE_AND_PG, write

import indexer.indexing.transcripts.session_tail as session_tail
import indexer.sources.discovery as discovery
from indexer.config import Config, SessionsConfig, StoreConfig
from indexer.engine import AgentIndex
from indexer.errors import PathRefused, RowRejected
from indexer.store import ChunkRow, FileState


@pytest.fixture(params=SQLITE_AND_PG)
def cfg(tmp_path: Path, request: pytest.FixtureRequest) -> Config:
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else ""
    return _config(tmp_path, url)


def _config(tmp_path: Path, url: str) -> Config:
    ws, sessions = tmp_path / "ws", tmp_path / "sessions"
    write(ws, "memory/2026-01-02.md", "# Tuesday\n- the heron came back to the pond\n")
    sessions.mkdir()
    return Config(
        workspace=ws,
        indexPath=tmp_path / "i.sqlite",
        sessions=SessionsConfig(dir=str(sessions)),
        store=StoreConfig(url=url),
    )


def _random_dirs(rng: random.Random, count: int, length: int) -> str:
    alphabet = string.ascii_letters + string.digits  # incompressible: no btree takes it
    return "/".join("".join(rng.choice(alphabet) for _ in range(length)) for _ in range(count))


def _hits(idx: AgentIndex, word: str) -> list[Any]:
    return list(idx.search(word, min_score=0)["results"])


def test_a_path_too_long_to_index_is_skipped_and_the_rest_indexed(cfg: Config) -> None:
    ws = cfg.workspace
    assert ws is not None
    rng = random.Random(3)
    long_file = write(ws, f"memory/{_random_dirs(rng, 16, 200)}/kestrel.md", "- kestrel\n")
    deep = write(ws, "memory/" + "/".join(["d" * 40] * 70) + "/deep.md", "- osprey\n")
    with AgentIndex(cfg) as idx:
        report = idx.sync()
        assert report.errors == []
        assert len(_hits(idx, "heron")) == 1
        assert _hits(idx, "kestrel") == [] and _hits(idx, "osprey") == []
        skipped = {s["reason"]: s["path"] for s in idx.status()["skipped"]}
    rel = str(long_file.relative_to(ws))
    (reason,) = [r for r in skipped if "not indexed" in r]
    assert reason == f"path of {len(rel):,} bytes: longer than 1,024, not indexed"
    shown = skipped[reason]
    assert shown.startswith(rel[:300]) and shown.endswith("/kestrel.md") and " … " in shown
    assert len(shown.encode()) < 700
    # the tree deeper than the walk goes: skipped with its own reason, also shortened
    (why,) = [r for r in skipped if "deep" in r]
    assert skipped[why].startswith("memory/ddd") and len(skipped[why].encode()) < 700
    assert deep.exists()


def test_a_value_the_database_refuses_skips_that_file_only(
    cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past our own limit (raised here) PostgreSQL refuses the path: that file is
    listed with PostgreSQL's reason and every other file is indexed (it was a failed
    sync, the batch rolled back). SQLite indexes it."""
    monkeypatch.setattr(discovery, "MAX_PATH_BYTES", 100_000)
    ws = cfg.workspace
    assert ws is not None
    write(ws, f"memory/{_random_dirs(random.Random(4), 16, 200)}/kestrel.md", "- kestrel\n")
    write(ws, "memory/zz-later.md", "- the osprey after it\n")
    with AgentIndex(cfg) as idx:
        report = idx.sync()
        assert len(_hits(idx, "heron")) == 1 and len(_hits(idx, "osprey")) == 1
        if cfg.store.url:
            assert _hits(idx, "kestrel") == []
            (err,) = report.errors
            assert err["reason"].startswith("PostgreSQL refused it: index row size")
            assert [s["reason"] for s in idx.status()["skipped"]] == [err["reason"]]
            assert idx.sync().errors == report.errors  # again next time, nothing else lost
            assert len(_hits(idx, "osprey")) == 1
        else:
            assert report.errors == [] and len(_hits(idx, "kestrel")) == 1


def test_a_bug_writing_new_files_together_skips_only_its_file(
    cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New files are written several at once (``append_files``); when that write
    fails with a bug (not the store's trouble: that fails the sync), each is written
    alone: the one that fails alone is reported and listed as skipped, every other
    file is indexed and counted."""
    ws = cfg.workspace
    assert ws is not None
    for i in range(5):
        write(ws, f"memory/n{i}.md", f"- note {i}: the wren{i} sang\n")
    write(ws, "memory/boom.md", "- the bittern boomed\n")
    with AgentIndex(cfg) as idx:
        kind = type(idx.store)
        real = kind.append_files

        def failing(store: Any, files: Any) -> int:
            if any(f.path == "memory/boom.md" for f in files):
                raise RuntimeError("injected")
            return int(real(store, files))

        monkeypatch.setattr(kind, "append_files", failing)
        report = idx.sync()
        assert [e["path"] for e in report.errors] == ["memory/boom.md"]
        assert "RuntimeError: injected" in report.errors[0]["reason"]
        assert report.added == 6 and report.chunksWritten == 6
        assert [s["path"] for s in idx.status()["skipped"]] == ["memory/boom.md"]
        for word in ("heron", "wren0", "wren4"):
            assert len(_hits(idx, word)) == 1, word
        assert _hits(idx, "bittern") == []
        monkeypatch.setattr(kind, "append_files", real)
        assert idx.sync().errors == [] and len(_hits(idx, "bittern")) == 1


def test_postgresql_refuses_a_row_without_spoiling_the_batch(tmp_path: Path, pg_url: str) -> None:
    """The store side of the test above: a refused row is RowRejected (a file's
    trouble, not the store's), and the batch goes on after its savepoint."""
    cfg = _config(tmp_path, str(pg_url))
    long_path = "memory/" + _random_dirs(random.Random(5), 16, 200) + ".md"
    row = ChunkRow(1, 1, "", "h" * 64, "- a kestrel", "- a kestrel")
    state = FileState("f" * 64, 1, 11)
    with AgentIndex(cfg) as idx:
        idx.sync()
        store = idx.store
        with store.batch():
            with pytest.raises(RowRejected, match="index row size"), store.savepoint():
                store.append_chunks(long_path, "memory", state, 1, [row])
            store.append_chunks("memory/ok.md", "memory", state, 1, [row])
        assert set(store.file_states("memory")) == {"memory/2026-01-02.md", "memory/ok.md"}


def _transcript(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def test_transcript_text_no_store_can_hold_is_indexed_as_replacement_characters(
    cfg: Config,
) -> None:
    sessions = cfg.sessions_dir()
    assert sessions is not None
    _transcript(
        sessions / "a.jsonl",
        [
            {"type": "message", "role": "user", "content": "an osprey \ud83d cut in two"},
            {"type": "message", "role": "user", "content": "a nul \u0000 by the osprey"},
            {"type": "message", "role": "assistant", "name": "bo\udc80t", "content": "ok then"},
        ],
    )
    raw = (sessions / "a.jsonl").read_text()
    assert "\\ud83d" in raw and "\\u0000" in raw  # the escapes are what reach the parser
    _transcript(sessions / "b.jsonl", [{"type": "message", "role": "user", "content": "kestrel"}])
    with AgentIndex(cfg) as idx:
        report = idx.sync()
        assert report.sessions is not None and report.sessions["errors"] == []
        hits = _hits(idx, "osprey")
        assert len(hits) == 1 and len(_hits(idx, "kestrel")) == 1
        assert "osprey \ufffd cut" in hits[0]["snippet"]
        got = idx.get(hits[0]["path"], start=1, lines=3)["text"].splitlines()
    assert got == [
        "User: an osprey \ufffd cut in two",
        "User: a nul \ufffd by the osprey",
        "Assistant (bo\ufffdt): ok then",
    ]


def _fail_on_boom(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fault injected into the transcript parser for lines holding "boom"; returns
    the real parser (to put back)."""
    real = session_tail.parse_message

    def faulty(raw: bytes) -> Any:
        if b"boom" in raw:
            raise RuntimeError("injected")
        return real(raw)

    monkeypatch.setattr(session_tail, "parse_message", faulty)
    return real


def test_one_transcript_failing_leaves_the_others_indexed(
    cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transcript the writer cannot index (here a fault injected into the parser for
    one line) is reported and tried again next sync; the transcripts after it are
    indexed meanwhile (they were not: the error ended the whole sync)."""
    sessions = cfg.sessions_dir()
    assert sessions is not None
    _transcript(sessions / "a.jsonl", [{"type": "message", "role": "user", "content": "boom"}])
    _transcript(sessions / "b.jsonl", [{"type": "message", "role": "user", "content": "kestrel"}])
    real = _fail_on_boom(monkeypatch)
    with AgentIndex(cfg) as idx:
        report = idx.sync()
        assert report.sessions is not None
        assert report.sessions["errors"] == [
            {"path": "sessions/a.jsonl", "reason": "internal error: RuntimeError: injected"}
        ]
        assert len(_hits(idx, "kestrel")) == 1 and _hits(idx, "boom") == []
        left = {"sessions/a.jsonl": "internal error: RuntimeError: injected"}
        assert idx.writer.left_behind == left
        # a sync that does not look at it (not due yet) leaves it left behind
        with (sessions / "a.jsonl").open("a") as fh:
            fh.write(json.dumps({"type": "message", "role": "user", "content": "x"}) + "\n")
        quiet = replace(cfg.sessions, idleFlushMs=3_600_000, deltaMessages=1000)
        idx.writer.cfg = replace(cfg, sessions=quiet)
        assert idx.writer.sync_sessions(due_only=True).deferred == 1
        assert idx.writer.left_behind == left
        idx.writer.cfg = cfg
        monkeypatch.setattr(session_tail, "parse_message", real)
        report = idx.sync()
        assert report.sessions is not None and report.sessions["errors"] == []
        assert len(_hits(idx, "boom")) == 1 and idx.writer.left_behind == {}


def test_memory_get_of_a_path_with_a_lone_surrogate_is_refused(cfg: Config) -> None:
    """A client's JSON can carry ``\\ud800`` in a path: refused as not Unicode (it
    was a UnicodeEncodeError, answered as an internal error)."""
    with AgentIndex(cfg) as idx:
        idx.sync()
        with pytest.raises(PathRefused, match="not valid Unicode") as got:
            idx.get("memory/\ud800.md")
        assert "xed" in str(got.value)  # the bytes shown escaped


@pytest.mark.slow
def test_the_daemon_status_shows_a_transcript_it_could_not_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transcript left behind (its error caught so the others are indexed) is the
    sessions task's error in the daemon's ``status``: ``dirty``, naming it, until a
    sync indexes it. It used to look like any success: all was well while one
    transcript was never indexed."""
    from daemon_util import rpc, wait_for

    from indexer.config import Settings
    from indexer.surfaces.daemon import Daemon

    cfg = _config(tmp_path, "")
    cfg = replace(
        cfg,
        sessions=replace(cfg.sessions, idleFlushMs=100),
        sync=replace(cfg.sync, watchDebounceMs=100),
    )
    sessions = cfg.sessions_dir()
    assert sessions is not None
    real = _fail_on_boom(monkeypatch)
    d = Daemon(Settings((cfg,)), socket_path=tmp_path / "d.sock")
    d.start()
    try:
        sock = d.socket_path
        _transcript(sessions / "a.jsonl", [{"type": "message", "role": "user", "content": "boom"}])
        _transcript(
            sessions / "b.jsonl", [{"type": "message", "role": "user", "content": "kestrel"}]
        )
        wait_for(lambda: rpc(sock, "memory_search", {"query": "kestrel"})["results"], timeout=30)
        st = wait_for(lambda: (s := rpc(sock, "status"))["errors"]["sessions"] and s, timeout=30)
        assert (
            st["dirty"]
            and "sessions/a.jsonl: internal error: RuntimeError: injected"
            in (st["errors"]["sessions"])
        )
        assert st["lastError"] == st["errors"]["sessions"]
        rpc(sock, "reindex", {})  # a reindex that fails it again does not clear it
        st = rpc(sock, "status")
        assert st["dirty"] and "sessions/a.jsonl" in (st["errors"]["sessions"] or "")
        monkeypatch.setattr(session_tail, "parse_message", real)
        with (sessions / "a.jsonl").open("a") as fh:  # an event: the writer looks again
            fh.write(json.dumps({"type": "message", "role": "user", "content": "later"}) + "\n")
        wait_for(lambda: rpc(sock, "memory_search", {"query": "boom"})["results"], timeout=30)
        st = wait_for(lambda: (s := rpc(sock, "status"))["errors"]["sessions"] is None and s)
        assert not st["dirty"] and st["lastError"] is None
    finally:
        d.stop()


def test_files_dated_past_2262_are_indexed_and_read_as_unchanged(cfg: Config) -> None:
    """Reliability round 4: a memory file dated past ~2203 (mtime + ctime) or a
    transcript past 2262 is over a 64-bit column; both stores refused them
    ("OverflowError", "out of range for type bigint") and they were never indexed."""
    import os

    ws = cfg.workspace
    assert ws is not None
    future = 10_500_000_000 * 10**9  # 2302
    note = write(ws, "memory/far.md", "# Far\n- the ZEPHYR-8 launch\n")
    os.utime(note, ns=(future, future))
    sessions = Path(cfg.sessions.dir)
    line = json.dumps({"type": "message", "message": {"role": "user", "content": "ORBIT-9"}})
    (sessions / "t.jsonl").write_text(line + "\n")
    os.utime(sessions / "t.jsonl", ns=(future, future))
    with AgentIndex(cfg) as idx:
        rep = idx.sync()
        assert rep.added == 2 and not rep.errors, rep
        assert _hits(idx, "ZEPHYR-8") and _hits(idx, "ORBIT-9")
        again = idx.sync()
        assert again.unchanged == 2 and again.updated == 0, again
