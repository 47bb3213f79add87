from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SQLITE_AND_PG, write
from daemon_util import DaemonProc, child_env, daemon_config, rpc, rpc_raw, run_cli, wait_for

from indexer.api import METHODS
from indexer.surfaces.client import Client

pytestmark = pytest.mark.slow


def make_config(tmp_path: Path, ws: Path, sessions: Path, extra: str = "") -> Path:
    return daemon_config(
        tmp_path,
        ws,
        sessions,
        "deltaMessages = 50\nidleFlushMs = 3600000\n",
        f"[sync]\nwatchDebounceMs = 200\n{extra}",
    )


@pytest.fixture(params=SQLITE_AND_PG)
def daemon(tmp_path: Path, workspace: Path, request: pytest.FixtureRequest) -> Iterator[DaemonProc]:
    """A daemon on the test workspace, on each store: its own SQLite file, and the
    suite's PostgreSQL (conftest ``pg_url``)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    store = ""
    if request.param == "postgresql":
        store = f'[store]\nurl = "{request.getfixturevalue("pg_url")}"\n'
    cfg = make_config(tmp_path, workspace, sessions, store)
    d = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env())
    d.start()
    yield d
    d.stop()


def test_search_get_status_and_socket_mode(daemon: DaemonProc) -> None:
    assert os.stat(daemon.sock).st_mode & 0o777 == 0o600
    res = rpc(daemon.sock, "memory_search", {"query": "rye bread"})
    assert res["results"][0]["path"] == "MEMORY.md" and res["mode"] == "keyword"
    gated = rpc(daemon.sock, "memory_search", {"query": "thanks!", "gate": True})
    assert gated["results"] == [] and gated["skipped"] == "small talk"
    got = rpc(daemon.sock, "memory_get", {"path": "MEMORY.md", "from": 4, "lines": 1})
    assert got["text"] == "- Dana likes rye bread."
    st = rpc(daemon.sock, "status")
    assert st["sources"]["memory"]["files"] == 3 and st["daemon"]["watcher"]["backend"]
    assert rpc(daemon.sock, "ping")["ok"] is True


def test_the_typed_client_speaks_every_method_a_client_sends(daemon: DaemonProc) -> None:
    """``Client`` has a method for each entry of the table a client sends (the
    qmd daemon's own aside), and each answers through a real daemon."""
    sent = {"ping", "status", "memory_search", "memory_get", "memory_curated", "reindex"}
    sent |= {"memory_audit"}
    names = {"memory_search": "search", "memory_get": "get", "memory_curated": "curated"}
    names |= {"memory_audit": "audit"}
    assert set(METHODS) - {"qmd_search"} == sent
    assert all(callable(getattr(Client, names.get(m, m))) for m in sent | {"qmd_search"})
    client = Client(daemon.sock, "main")
    assert client.ping()["agents"]
    assert client.search("rye bread")["results"][0]["path"] == "MEMORY.md"
    assert client.search("rye bread", maxResults=1, mode="keyword")["mode"] == "keyword"
    assert client.get("MEMORY.md", **{"from": 4, "lines": 1})["text"] == "- Dana likes rye bread."
    assert client.status()["sources"]["memory"]["files"] == 3
    assert isinstance(client.curated("triggers")["results"], list)
    assert client.reindex()["agent"] == "main"
    assert client.audit("secrets")["counts"] == {"secrets": 0}


def test_new_fact_becomes_searchable(daemon: DaemonProc, workspace: Path) -> None:
    write(workspace, "memory/2026-11-21.md", "# today\n- The wifi password hint is LANTERN-77.\n")
    hit = wait_for(lambda: rpc(daemon.sock, "memory_search", {"query": "LANTERN-77"})["results"])
    assert hit[0]["path"] == "memory/2026-11-21.md" and hit[0]["startLine"] == 1
    (workspace / "memory/2026-11-21.md").unlink()
    wait_for(lambda: rpc(daemon.sock, "memory_search", {"query": "LANTERN-77"})["results"] == [])


def test_transcript_append_is_indexed_with_jsonl_lines(daemon: DaemonProc, tmp_path: Path) -> None:
    f = tmp_path / "sessions" / "s1.jsonl"
    with f.open("a") as fh:
        for i in range(60):
            fh.write(
                json.dumps(
                    {
                        "type": "message",
                        "role": "user" if i % 2 else "assistant",
                        "content": f"message {i} about the heron-{i:02d} sighting",
                    }
                )
                + "\n"
            )
    hits = wait_for(
        lambda: rpc(daemon.sock, "memory_search", {"query": "heron-42", "sources": ["sessions"]})[
            "results"
        ]
    )
    assert hits[0]["path"] == "sessions/s1.jsonl"
    assert hits[0]["startLine"] <= 43 <= hits[0]["endLine"]
    got = rpc(daemon.sock, "memory_get", {"path": "sessions/s1.jsonl", "from": 43, "lines": 1})
    assert "heron-42" in got["text"]


def test_garbage_requests_get_errors_and_the_daemon_keeps_serving(daemon: DaemonProc) -> None:
    ok = b'{"jsonrpc":"2.0","id":9,"method":"ping"}\n'
    cases = [
        b"this is not json\n",
        b"\xff\xfe\xfa invalid utf-8\n",
        b"[" * 100_000 + b"\n",
        b'{"jsonrpc":"2.0","id":1,"method":"memory_search","params":{"query":'
        + b"9" * 5000
        + b"}}\n",
        b'{"jsonrpc":"2.0","id":1,"method":"nope"}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"memory_search","params":["x"]}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"memory_search","params":{"query":7}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"memory_search","params":{"query":"x",'
        b'"maxResults":"ten"}}\n',
        b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n',
        b'{"id":1,"method":"ping"}\n',
        b"[]\n",
        b'"just a string"\n',
        b'{"jsonrpc":"2.0","id":1,"method":"memory_get","params":{"path":"../../etc/passwd"}}\n',
    ]
    for payload in cases:
        replies = rpc_raw(daemon.sock, payload + ok)
        assert "error" in replies[0], payload[:60]
        assert replies[-1]["result"]["ok"] is True, payload[:60]  # same connection still works
    # Oversized request: an error, then the connection is still usable.
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (1_100_000) + b'"}}\n'
    replies = rpc_raw(daemon.sock, big + ok)
    assert replies[0]["error"]["code"] == -32001 and replies[-1]["result"]["ok"] is True
    # A half-written request, then the client vanishes.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(daemon.sock))
    s.sendall(b'{"jsonrpc":"2.0","id":1,"meth')
    s.close()
    # A whole request without its newline, then the client closes its side: answered
    # (a client that ends its request with shutdown(SHUT_WR) used to wait in vain).
    (reply,) = rpc_raw(daemon.sock, b'{"jsonrpc":"2.0","id":7,"method":"ping"}')
    assert reply["id"] == 7 and reply["result"]["ok"] is True
    (reply,) = rpc_raw(daemon.sock, b'{"jsonrpc":"2.0","id":8,"meth')
    assert reply["error"]["code"] == -32700
    # Batch requests.
    batch = rpc_raw(
        daemon.sock,
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"nope"}]\n',
    )[0]
    assert batch[0]["result"]["ok"] and batch[1]["error"]["code"] == -32601
    assert rpc(daemon.sock, "memory_search", {"query": "rye"})["results"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another uid")
def test_other_uid_is_refused(daemon: DaemonProc) -> None:
    def as_nobody() -> str:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: become nobody and try the socket
            os.close(r)
            try:
                # Enter the socket's folder first: pytest's temp folders above it are
                # 0700, and this test is about the socket, not its ancestors.
                os.chdir(daemon.sock.parent)
                os.setgid(65534)
                os.setuid(65534)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(5)
                s.connect(daemon.sock.name)
                # The refusal is sent on accept, before any request (sending first
                # can hit a closed socket).
                msg = s.recv(4096).decode() or "closed"
            except OSError as exc:
                msg = f"oserror {exc.errno}"
            os.write(w, msg.encode())
            os._exit(0)
        os.close(w)
        os.waitpid(pid, 0)
        out = os.read(r, 65536).decode()
        os.close(r)
        return out

    parent = daemon.sock.parent
    os.chmod(parent, 0o755)
    assert as_nobody().startswith("oserror 13")  # mode 0600: the kernel says no
    os.chmod(daemon.sock, 0o666)  # even with the file open to all, the uid check refuses
    reply = as_nobody()
    assert '"code": -32003' in reply and "different user" in reply, reply
    assert rpc(daemon.sock, "status")["daemon"]["refusedConnections"] == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to listen as another uid")
def test_serve_on_a_socket_another_user_serves_says_so(tmp_path: Path, workspace: Path) -> None:
    """Another user's process listens on the socket path: that is no memindex of
    ours, and `serve` used to say "a memindex daemon is already serving"."""
    run = tmp_path / "shared"
    run.mkdir(mode=0o777)
    os.chmod(run, 0o1777)
    sock = run / "mi.sock"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: another user, listening where the daemon would
        try:
            os.close(r)
            os.chdir(run)  # pytest's folders above are 0700: bind by the name inside
            os.setgid(65534)
            os.setuid(65534)
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind(sock.name)
            srv.listen()
            os.write(w, b"up")
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(w)
    try:
        assert os.read(r, 16) == b"up"
        sessions = tmp_path / "sessions"
        sessions.mkdir()
        d = DaemonProc(make_config(tmp_path, workspace, sessions), sock, child_env())
        d.start(wait=False)
        assert d.proc is not None and d.proc.wait(timeout=30) == 2
        out = d.stop()
        assert "served by a process of uid 65534" in out and "already serving" not in out, out
    finally:
        os.close(r)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_stale_socket_replaced_live_one_kept(tmp_path: Path, workspace: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    cfg = make_config(tmp_path, workspace, sessions)
    sock = tmp_path / "run" / "mi.sock"
    sock.parent.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))
    stale.close()  # the file stays: what a crashed daemon leaves
    first = DaemonProc(cfg, sock, child_env()).start()
    try:
        second = DaemonProc(cfg, sock, child_env()).start(wait=False)
        assert second.proc is not None
        second.proc.wait(timeout=30)
        out = second.stop()
        assert "already" in out
        assert rpc(sock, "ping")["ok"]  # the live one was not stolen
    finally:
        first.stop()
    assert not sock.exists()  # SIGTERM removed it


def test_cli_goes_through_the_daemon(daemon: DaemonProc, cli) -> None:  # type: ignore[no-untyped-def]
    args = ("--config", str(daemon.config))
    # The CLI finds the daemon on the configured socket only; point it there.
    with daemon.config.open("a") as fh:
        fh.write(f'[server]\nsocket = "{daemon.sock}"\n')
    code, out, err = cli(*args, "status")
    assert code == 0 and "daemon:    pid" in out, err
    rpc(daemon.sock, "memory_search", {"query": "sourdough"})  # loads the snapshot
    wait_for(lambda: rpc(daemon.sock, "status")["memory"]["state"] == "current")
    code, out, err = cli(*args, "status")
    assert "in memory: current (4 chunks)\n" in out, out
    code, out, err = cli(*args, "index", "--json")
    assert code == 0, err
    assert json.loads(out)["unchanged"] == 3
    code, out, _ = cli(*args, "search", "sourdough", "--json")
    assert json.loads(out)["results"][0]["path"] == "memory/2026-11-02.md"


# Run in a fresh interpreter: which modules a command loaded, and its output.
_PROBE = """
import io, json, sys
from indexer.surfaces.cli import main
out = io.StringIO()
code = main(sys.argv[1:], out=out)
heavy = sorted(m for m in ("numpy", "tiktoken", "tenacity", "indexer.search.searcher",
                           "indexer.indexing.writer", "indexer.store", "indexer.search.query.parse",
                           "indexer.search.pipeline", "logging", "shutil")
               if m in sys.modules)
logs = "logging" in sys.modules and bool(sys.modules["logging"].getLogger().handlers)
print(json.dumps({"code": code, "out": out.getvalue(), "heavy": heavy, "logs": logs}))
"""


def _probe(*args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=child_env()
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return result


def test_commands_answered_by_the_daemon_load_only_the_client(daemon: DaemonProc) -> None:
    """search, get, status and index through the daemon import neither the read
    nor the write path, nor numpy, the tokenizer or the store (what made each
    process cost 0.4 s), nor logging and shutil (~13 ms)."""
    with daemon.config.open("a") as fh:
        fh.write(f'[server]\nsocket = "{daemon.sock}"\n')
    conf = ("--config", str(daemon.config))
    for args in (
        ("search", "sourdough"),
        ("get", "memory/2026-11-02.md"),
        ("status",),
        ("index",),
    ):
        got = _probe(*conf, *args)
        assert got["code"] == 0 and got["heavy"] == [], (args, got)
    assert "memory/2026-11-02.md" in _probe(*conf, "search", "sourdough")["out"]
    # Without the daemon the same command reads the file (and needs the read path).
    daemon.stop()
    got = _probe(*conf, "search", "sourdough")
    assert got["code"] == 0 and "memory/2026-11-02.md" in got["out"]
    assert (
        "indexer.search.searcher" in got["heavy"] and "indexer.indexing.writer" not in got["heavy"]
    )
    assert got["logs"], "reading the file itself, the command logs as memindex does"


def test_no_change_index_loads_no_tokenizer_or_numpy(tmp_path: Path, workspace: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text(f'workspace = "{workspace}"\nindexPath = "{tmp_path / "i.sqlite"}"\n')
    first = _probe("--config", str(conf), "index")
    assert first["code"] == 0 and "3 added" in first["out"]
    again = _probe("--config", str(conf), "index")
    assert again["code"] == 0 and "3 unchanged" in again["out"]
    assert "tiktoken" not in again["heavy"] and "numpy" not in again["heavy"], again


def test_sighup_reloads_config(daemon: DaemonProc, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes, "idea.md", "# Idea\n- a quokka-shaped lamp\n")
    with daemon.config.open("r+") as fh:
        text = fh.read()
        fh.seek(0)
        fh.write(f'extraPaths = ["{notes}"]\n' + text)
    daemon.signal(signal.SIGHUP)
    hit = wait_for(lambda: rpc(daemon.sock, "memory_search", {"query": "quokka"})["results"])
    assert hit[0]["path"] == "extra/notes/idea.md"


def test_a_reload_that_cannot_be_served_keeps_the_old_config_and_says_so(
    tmp_path: Path, workspace: Path
) -> None:
    """A SIGHUP to a config whose index cannot be opened (an index path under a
    file) used to empty the daemon's agents and kill its indexing thread: it kept
    its socket, answered every request "internal error: StopIteration", and never
    indexed again. Now the reload is refused as a whole. (SQLite: on PostgreSQL the
    index path is not used.)"""
    (tmp_path / "sessions").mkdir()
    cfg = make_config(tmp_path, workspace, tmp_path / "sessions")
    daemon = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env()).start()
    try:
        _refused_then_fixed(daemon, tmp_path)
    finally:
        daemon.stop()


def _refused_then_fixed(daemon: DaemonProc, tmp_path: Path) -> None:
    good = daemon.config.read_text()
    (tmp_path / "blocker").write_text("a file, not a folder\n")
    daemon.config.write_text(
        good.replace("[", f'indexPath = "{tmp_path / "blocker" / "x.sqlite"}"\n[', 1)
    )
    daemon.signal(signal.SIGHUP)
    st = wait_for(lambda: (s := rpc(daemon.sock, "status"))["daemon"].get("reloadError") and s)
    assert "blocker" in st["daemon"]["reloadError"] and st["daemon"]["reloads"] == 0
    ws = Path(st["workspace"])
    write(ws, "memory/2026-12-01.md", "- a capybara crossed the road\n")  # still indexing
    hit = wait_for(lambda: rpc(daemon.sock, "memory_search", {"query": "capybara"})["results"])
    assert hit[0]["path"] == "memory/2026-12-01.md"
    daemon.config.write_text(good)  # fixed: the next reload goes through and clears it
    daemon.signal(signal.SIGHUP)
    wait_for(lambda: rpc(daemon.sock, "status")["daemon"]["reloads"] == 1)
    assert rpc(daemon.sock, "status")["daemon"]["reloadError"] is None


def test_kill9_mid_sync_then_restart_converges(tmp_path: Path) -> None:
    ws = tmp_path / "big"
    for i in range(1500):
        write(
            ws,
            f"memory/2025-{i:04d}.md",
            f"# day {i}\n\n" + "\n".join(f"- line {j} of day {i} token{i}x{j}" for j in range(30)),
        )
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    cfg = make_config(tmp_path, ws, sessions)
    sock = tmp_path / "run" / "mi.sock"
    d = DaemonProc(cfg, sock, child_env()).start(wait=False)
    index = Path(os.environ["XDG_STATE_HOME"]) / "memindex" / "main.sqlite"

    def indexed() -> int:
        import apsw

        from indexer.errors import StoreError
        from indexer.store import Store

        try:
            with Store(index, readonly=True) as s:
                return int(s.db.execute("SELECT count(*) FROM files").fetchone()[0])
        except (StoreError, apsw.Error):
            return -1  # not created, or its schema not written yet

    try:  # the daemon is stopped whatever fails below
        # Kill only once the sync is under way and not finished: mid-sync for real.
        wait_for(lambda: 0 < indexed() < 1500, timeout=60, interval=0.01)
        d.kill()
        d.start()  # a stale socket and a half-done index: both recovered
        st = rpc(sock, "status")
        assert st["sources"]["memory"] == {
            "files": 1500,
            "chunks": st["sources"]["memory"]["chunks"],
        }
        from indexer.config import Config
        from indexer.engine import AgentIndex

        clean = Config(workspace=ws, indexPath=tmp_path / "clean.sqlite")
        with AgentIndex(clean) as idx:
            idx.sync()
            want = sorted(
                idx.store.db.execute(
                    "SELECT path, start_line, end_line, hash FROM chunks"
                ).fetchall()
            )
        from indexer.store import Store

        with Store(Path(st["indexPath"]), readonly=True) as s:
            got = sorted(
                s.db.execute("SELECT path, start_line, end_line, hash FROM chunks").fetchall()
            )
            assert s.integrity() == "ok"
            fts = s.db.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
        assert got == want  # no duplicates, nothing missing
        assert fts == len(want)
    finally:
        d.stop()


def test_one_method_table_for_the_daemon_and_the_direct_path(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    """The daemon and a reader without it (CLI, MCP) parse parameters in one place:
    the same errors, the same ``corpus`` alias."""
    from indexer import api
    from indexer.config.file import load_config
    from indexer.errors import InvalidParams
    from indexer.surfaces.reading import read_call

    cfg = load_config(daemon.config)  # names no socket: read_call reads the file
    bad = ({}, {"query": ""}, {"query": "x", "corpus": "nope"}, {"query": "x", "mode": "dense"})
    for params in bad:
        with pytest.raises(RuntimeError) as remote:
            rpc(daemon.sock, "memory_search", params)
        assert remote.value.args[0]["code"] == -32602, params
        with pytest.raises(InvalidParams):
            read_call(cfg, "memory_search", params)
    with pytest.raises(RuntimeError) as remote:
        rpc(daemon.sock, "memory_get", {})
    assert remote.value.args[0]["code"] == -32602
    with pytest.raises(RuntimeError) as remote:
        rpc(daemon.sock, "memory_forget", {})
    assert remote.value.args[0]["code"] == -32601
    listed = [name for name, m in api.METHODS.items() if m.listed]
    assert remote.value.args[0]["data"]["methods"] == listed
    assert rpc(daemon.sock, "memory_search", {"query": "sourdough", "mode": "keyword"})["mode"] == (
        "keyword"
    )
    for corpus, want in (("memory", {"memory"}), ("all", {"memory"})):
        params = {"query": "sourdough", "corpus": corpus}
        over_socket = rpc(daemon.sock, "memory_search", params)["results"]
        direct = read_call(cfg, "memory_search", params)["results"]
        assert [r["citation"] for r in over_socket] == [r["citation"] for r in direct]
        assert {r["source"] for r in direct} == want


def test_the_index_loop_survives_an_error_no_task_handled(tmp_path: Path, workspace: Path) -> None:
    """An exception escaping the writer's loop used to end its thread silently: the
    daemon kept answering and never indexed again. The loop now logs it, counts it
    (``daemon.loopErrors``) and goes on."""
    from indexer.config import Config, Settings
    from indexer.surfaces.daemon import Daemon

    cfg = Config(workspace=workspace, indexPath=tmp_path / "i.sqlite")
    d = Daemon(Settings((cfg,)), socket_path=tmp_path / "d.sock")
    real, failed = d.tasks.run_jobs, []

    def once() -> None:
        if not failed:
            failed.append(1)
            raise RuntimeError("an error no task handled")
        real()

    d.tasks.run_jobs = once  # type: ignore[method-assign]
    d.start()
    try:
        write(workspace, "memory/2026-12-02.md", "- an okapi at the watering hole\n")
        hit = wait_for(lambda: rpc(d.socket_path, "memory_search", {"query": "okapi"})["results"])
        assert hit[0]["path"] == "memory/2026-12-02.md"
        assert rpc(d.socket_path, "status")["daemon"]["loopErrors"] == 1
    finally:
        d.stop()


def test_a_daemon_maps_less_of_the_index_than_a_one_shot_search(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon's connections map 256 MB of the index file (its RSS counts the pages
    its searches touch, once per connection); a one-shot process maps 1 GB."""
    import indexer.store.sqlite.connection as connection
    from indexer.config import Config, Settings
    from indexer.engine import AgentIndex
    from indexer.store.records import DAEMON_MMAP_BYTES, MMAP_BYTES
    from indexer.surfaces.daemon import Daemon

    monkeypatch.setattr(connection, "_MMAP", [MMAP_BYTES])  # this test's process only
    cfg = Config(workspace=workspace, indexPath=tmp_path / "i.sqlite")
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert idx.store.db.execute("PRAGMA mmap_size").fetchone()[0] == MMAP_BYTES
    d = Daemon(Settings((cfg,)), socket_path=tmp_path / "d.sock")
    d.start()
    try:
        with next(iter(d.agents.values())).reader() as reader:
            got = reader.store.db.execute("PRAGMA mmap_size").fetchone()[0]  # type: ignore[attr-defined]
        assert got == DAEMON_MMAP_BYTES < MMAP_BYTES
    finally:
        d.stop()


def test_status_names_a_daemon_that_serves_something_else(tmp_path: Path, workspace: Path) -> None:
    """A daemon answers on the socket but serves another agent: status said "daemon:
    not running"; it says which daemon and what it serves."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    sock = tmp_path / "run" / "mi.sock"
    d = DaemonProc(make_config(tmp_path, workspace, sessions), sock, child_env()).start()
    try:
        other = tmp_path / "other"
        write(other, "MEMORY.md", "# Other\n")
        conf = write(tmp_path, "o.toml", f'workspace = "{other}"\n[server]\nsocket = "{sock}"\n')
        r = run_cli("--config", str(conf), "status")
        line = next(ln for ln in r.stdout.splitlines() if ln.startswith("daemon:"))
        assert "one answers on" in line and "serves main" in line and "not agent ws-other-" in line
        # The daemon serves this very agent but its status did not come (it was
        # starting): the line said it served "main (X), not agent main (X)".
        from indexer.config.file import load_config
        from indexer.surfaces.cli.status import _other_daemon

        mine = make_config(tmp_path / "mine", workspace, sessions, f'[server]\nsocket = "{sock}"\n')
        same = _other_daemon(load_config(mine))
        assert "for agent main but did not give its status" in same and "not agent" not in same
    finally:
        d.stop()


def test_status_with_a_broken_config_shows_the_running_daemon(
    tmp_path: Path, workspace: Path
) -> None:
    """An edit that breaks the default config: the daemon goes on with its own, and
    `memindex status` shows it with why the file is refused (it failed instead)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    conf_dir = tmp_path / "xdg" / "memindex"
    conf_dir.mkdir(parents=True)
    conf = conf_dir / "config.toml"
    conf.write_text(f'workspace = "{workspace}"\nagentId = "main"\n')
    env = {**child_env(), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    run = tmp_path / "rt"
    run.mkdir(mode=0o700)
    env["XDG_RUNTIME_DIR"] = str(run)
    d = DaemonProc(conf, run / "memindex.sock", env).start()
    try:
        conf.write_text("workspace = [not toml\n")
        r = run_cli("status", env=env)
        assert r.returncode == 0, r.stderr
        assert "the config does not load" in r.stderr and "not valid TOML" in r.stderr
        assert "daemon:    pid" in r.stdout and "config:    does not load" in r.stdout
        r = run_cli("status", "--json", env=env)
        assert json.loads(r.stdout)["daemon"]["configError"]
        r = run_cli("serve", "--stop", env=env)  # and stopped by the socket it names
        assert r.returncode == 0 and "stopped the daemon" in r.stdout, r.stdout + r.stderr
        assert d.proc is not None and d.proc.wait(timeout=30) == 0
    finally:
        d.stop()


def test_status_with_a_broken_config_finds_the_daemon_on_the_socket_it_names(
    tmp_path: Path, workspace: Path
) -> None:
    """The broken config names the socket (`server.socket`): status read the default
    one, found nothing and printed only the config error, exit 2."""
    sock = tmp_path / "run" / "mi.sock"
    conf = write(tmp_path, "c.toml", f'workspace = "{workspace}"\n[server]\nsocket = "{sock}"\n')
    d = DaemonProc(conf, sock, child_env()).start()
    try:
        conf.write_text("bogusKey = 5\n" + conf.read_text())  # an unknown key
        r = run_cli("--config", str(conf), "status")
        assert r.returncode == 0, r.stderr
        assert "unknown key(s): bogusKey" in r.stderr and "daemon:    pid" in r.stdout
        # a relative socket is the config file's folder's, as when the file loads
        conf.write_text(
            f'bogusKey = 5\nworkspace = "{workspace}"\n[server]\nsocket = "run/mi.sock"\n'
        )
        r = run_cli("--config", str(conf), "status")
        assert r.returncode == 0 and "daemon:    pid" in r.stdout, r.stderr
    finally:
        d.stop()


def test_doctor_after_a_crash_says_what_to_do(tmp_path: Path, workspace: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    sock = tmp_path / "run" / "mi.sock"
    cfg = make_config(tmp_path, workspace, sessions, f'[server]\nsocket = "{sock}"\n')
    d = DaemonProc(cfg, sock, child_env()).start()
    d.kill()  # the socket file stays behind
    assert sock.exists()
    r = run_cli("--config", str(cfg), "doctor")
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("FAIL daemon"))
    assert "crashed or was killed" in line and "memindex serve" in line, line
