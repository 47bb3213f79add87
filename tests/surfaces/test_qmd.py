"""memindex-qmd, driven with the argument lists OpenClaw's QMD manager uses and read
the way its parser reads it (JSON array, @@ -start,count header, docid -> documents)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write


@pytest.fixture
def qmd_env(tmp_path: Path, workspace: Path) -> dict[str, str]:
    write(
        workspace,
        "memory/2026-11-15.md",
        "# 2026-11-15\n\n- Filed ticket KESTREL-0429 about the hallway sensor.\n",
    )
    env = dict(os.environ)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "agent-config")
    env["XDG_CACHE_HOME"] = str(tmp_path / "agent-cache")
    env["NO_COLOR"] = "1"
    env["MEMINDEX_QMD_NO_DAEMON"] = "1"  # the warm path has its own test
    return env


def qmd(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "memindex-qmd"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "indexer.surfaces.qmd"]
    return subprocess.run(
        [*cmd, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def resolve(env: dict[str, str], docid: str) -> tuple[str, str] | None:
    """What the manager does: read-only, 1 ms busy timeout, exact then prefix match."""
    db = sqlite3.connect(
        f"file:{env['XDG_CACHE_HOME']}/qmd/index.sqlite?mode=ro", uri=True, timeout=0.001
    )
    try:
        h = docid.lstrip("#")
        row = db.execute(
            "SELECT collection, path FROM documents WHERE hash = ? AND active = 1", (h,)
        ).fetchone()
        if row is None:
            row = db.execute(
                "SELECT collection, path FROM documents WHERE hash LIKE ? AND active = 1",
                (h + "%",),
            ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))
    finally:
        db.close()


@pytest.mark.slow
def test_manager_argument_lists(qmd_env: dict[str, str], workspace: Path) -> None:
    ws = workspace
    r = qmd(qmd_env, ws, "collection", "list", "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == []
    for path, name, mask in (
        (ws, "memory-root", "MEMORY.md"),
        (ws / "memory", "memory-dir", "**/*.md"),
    ):
        r = qmd(qmd_env, ws, "collection", "add", str(path), "--name", name, "--mask", mask)
        assert r.returncode == 0, r.stderr
    listing = json.loads(qmd(qmd_env, ws, "collection", "list", "--json").stdout)
    assert {c["name"] for c in listing} == {"memory-root", "memory-dir"}
    assert all({"name", "path", "pattern"} <= set(c) for c in listing)
    assert qmd(qmd_env, ws, "update").returncode == 0
    assert qmd(qmd_env, ws, "embed").returncode == 0

    for mode in ("search", "vsearch", "query"):
        r = qmd(qmd_env, ws, mode, "KESTREL-0429", "--json", "-n", "5", "-c", "memory-dir")
        assert r.returncode == 0, r.stderr
        hits = json.loads(r.stdout)
        assert hits, mode
        top = hits[0]
        assert set(top) >= {"docid", "score", "collection", "file", "snippet"}
        m = re.match(r"@@ -(\d+),(\d+)", top["snippet"])
        assert m, top["snippet"]
        start, count = int(m.group(1)), int(m.group(2))
        assert resolve(qmd_env, top["docid"]) == ("memory-dir", "2026-11-15.md")
        assert resolve(qmd_env, top["docid"].lstrip("#")) == ("memory-dir", "2026-11-15.md")
        lines = (ws / "memory" / "2026-11-15.md").read_text().split("\n")
        assert any("KESTREL-0429" in ln for ln in lines[start - 1 : start - 1 + count])

    r = qmd(qmd_env, ws, "search", "rye bread", "--json", "-n", "3", "-c", "memory-root")
    hit = json.loads(r.stdout)[0]
    assert hit["collection"] == "memory-root" and hit["file"] == "qmd://memory-root/MEMORY.md"
    assert json.loads(qmd(qmd_env, ws, "search", "zeppelin", "--json", "-n", "3").stdout) == []
    assert qmd(qmd_env, ws, "search", "zeppelin").stdout.strip() == "No results found"
    r = qmd(qmd_env, ws, "search", "x", "--json", "--explain")
    assert r.returncode != 0 and "unknown option" in r.stderr  # the manager retries `query`
    r = qmd(qmd_env, ws, "search", "x", "--json", "-c", "nope")
    assert r.returncode != 0 and "collection not found" in r.stderr.lower()
    r = qmd(qmd_env, ws, "get", "qmd://memory-dir/2026-11-15.md:3:1")
    assert r.returncode == 0 and "KESTREL-0429" in r.stdout

    # Removing a collection and updating deactivates its documents.
    assert qmd(qmd_env, ws, "collection", "remove", "memory-dir").returncode == 0
    assert qmd(qmd_env, ws, "update").returncode == 0
    assert resolve(qmd_env, top["docid"]) is None


@pytest.mark.slow
def test_searches_go_through_a_warm_daemon(qmd_env: dict[str, str], workspace: Path) -> None:
    import signal

    from daemon_util import rpc, wait_for

    env = {k: v for k, v in qmd_env.items() if k != "MEMINDEX_QMD_NO_DAEMON"}
    env["MEMINDEX_QMD_TRACE"] = "1"
    ws = workspace
    qmd(
        env,
        ws,
        "collection",
        "add",
        str(ws / "memory"),
        "--name",
        "memory-dir",
        "--mask",
        "**/*.md",
    )
    qmd(env, ws, "update")
    sock = Path(env["XDG_CACHE_HOME"]) / "memindex-qmd" / "daemon.sock"
    args = ("search", "KESTREL-0429", "--json", "-n", "5", "-c", "memory-dir")
    first = qmd(env, ws, *args)  # no daemon yet: answered by the process, daemon started
    assert first.returncode == 0 and "answered by the daemon" not in first.stderr
    try:
        wait_for(lambda: rpc(sock, "ping")["ok"], timeout=60)
        second = qmd(env, ws, *args)
        assert second.returncode == 0 and "answered by the daemon" in second.stderr
        assert json.loads(second.stdout) == json.loads(first.stdout)
        r = qmd(env, ws, "search", "x", "--json", "-c", "nope")
        assert r.returncode == 1 and "Collection not found" in r.stderr
        # The daemon holds the writer lock: `update` (run by the manager on its
        # interval) failed with exit 1 from then on. It goes through the daemon, and
        # a file the daemon indexed since is in the catalogue (it was left out).
        write(ws, "memory/2026-11-16.md", "# 2026-11-16\n\n- Filed ticket OSPREY-0512.\n")
        up = qmd(env, ws, "update")
        assert up.returncode == 0 and "4 documents" in up.stdout, up.stderr
        found = json.loads(qmd(env, ws, "search", "OSPREY-0512", "--json", "-n", "1").stdout)
        assert [f["file"] for f in found] == ["qmd://memory-dir/2026-11-16.md"]
        assert resolve(env, found[0]["docid"]) == ("memory-dir", "2026-11-16.md")
        write(ws, "memory/2026-11-17.md", "# 2026-11-17\n\n- Filed ticket EGRET-0600.\n")
        wait_for(  # indexed by the daemon's watcher, no update: found, with a docid
            lambda: json.loads(qmd(env, ws, "search", "EGRET-0600", "--json").stdout) != [],
            timeout=30,
        )
        # Changing the collections stops the daemon (it served the old set).
        qmd(env, ws, "collection", "add", str(ws), "--name", "memory-root", "--mask", "MEMORY.md")
        wait_for(lambda: not sock.exists(), timeout=30)
    finally:
        if sock.exists():  # do not leave a daemon behind, whatever failed
            with contextlib.suppress(Exception):
                os.kill(int(rpc(sock, "status")["daemon"]["pid"]), signal.SIGTERM)


def test_collection_update_and_embed_say_what_they_did(
    qmd_env: dict[str, str], workspace: Path
) -> None:
    r = qmd(qmd_env, workspace, "collection", "add", str(workspace / "memory"), "--name", "m")
    assert r.returncode == 0 and "Added collection 'm'" in r.stdout
    again = qmd(qmd_env, workspace, "collection", "add", str(workspace / "memory"), "--name", "m")
    assert "already" in again.stdout
    up = qmd(qmd_env, workspace, "update")
    assert up.returncode == 0 and re.search(r"Updated 1 collection\(s\): 3 documents", up.stdout)
    emb = qmd(qmd_env, workspace, "embed")
    assert emb.returncode == 0 and emb.stdout.strip()
    rm = qmd(qmd_env, workspace, "collection", "remove", "m")
    assert rm.returncode == 0 and "Removed collection 'm'" in rm.stdout


@pytest.mark.slow  # ~2 s of CPU
def test_collections_that_overlap_and_what_add_refuses(
    qmd_env: dict[str, str], workspace: Path
) -> None:
    """A file in two collections is found through either (`-c` the second found
    nothing), `-c` does not cut the hits to the first n x 4 of all collections, and
    `add` refuses a name in use, a name a qmd:// path cannot hold and a file."""
    ws, env = workspace, qmd_env
    for path, name in ((ws / "memory", "daily"), (ws, "all")):
        assert qmd(env, ws, "collection", "add", str(path), "--name", name).returncode == 0
    for n in range(12):  # many better hits in "daily" alone
        write(ws, f"memory/2026-10-{n + 1:02d}.md", "# day\n\n- pelican pelican pelican\n")
    write(ws, "notes/birds.md", "# birds\n\n- a pelican once\n")
    assert qmd(env, ws, "update").returncode == 0
    both = json.loads(qmd(env, ws, "search", "KESTREL-0429", "--json", "-c", "all").stdout)
    assert [f["file"] for f in both] == ["qmd://all/memory/2026-11-15.md"]
    assert resolve(env, both[0]["docid"]) is not None
    one = json.loads(qmd(env, ws, "search", "pelican", "--json", "-n", "1", "-c", "all").stdout)
    assert len(one) == 1 and one[0]["collection"] == "all"
    for bad in (("--name", ""), ("--name", "a/b"), ("--name", "daily")):
        r = qmd(env, ws, "collection", "add", str(ws / "notes"), *bad)
        assert r.returncode == 1, (bad, r.stdout)
    r = qmd(env, ws, "collection", "add", str(ws / "MEMORY.md"), "--name", "file")
    assert r.returncode == 1 and "not a folder" in r.stderr
    assert "already exists" in qmd(env, ws, "collection", "add", str(ws), "--name", "daily").stderr
    cols = Path(env["XDG_CONFIG_HOME"]) / "memindex-qmd" / "collections.json"
    assert cols.stat().st_mode & 0o777 == 0o600


def test_get_reads_a_large_document_whole_through_memory_get(
    qmd_env: dict[str, str], workspace: Path
) -> None:
    """``get`` goes through memory_get, which pages a file over ``maxGetBytes``
    (1 MiB): every line comes out, numbered, whether or not the index is built."""
    ws = workspace
    body = "".join(f"- line {i:05d} " + "x" * 90 + "\n" for i in range(1, 20001))
    write(ws, "memory/big.md", body)  # about 2 MiB
    r = qmd(qmd_env, ws, "collection", "add", str(ws / "memory"), "--name", "notes")
    assert r.returncode == 0, r.stderr
    r = qmd(qmd_env, ws, "get", "qmd://notes/big.md")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert len(out) == 20000 and out[0].startswith("1: - line 00001 ")
    assert out[-1].startswith("20000: - line 20000 ")
    r = qmd(qmd_env, ws, "get", "notes/big.md:19999:5")
    assert r.stdout.splitlines() == [
        "19999: - line 19999 " + "x" * 90,
        "20000: - line 20000 " + "x" * 90,
    ]


@pytest.mark.slow
def test_a_stuck_warm_daemon_is_neither_waited_on_nor_silent(
    qmd_env: dict[str, str], workspace: Path
) -> None:
    """The warm daemon stops answering (here: stopped with SIGSTOP). A search gives up
    on it after 3 s as before, answers from the index and now says so; `update` no
    longer waits up to 600 s on it: it stops it (it holds the writer lock) and updates
    directly."""
    import signal
    import time

    from daemon_util import rpc, wait_for

    env = {k: v for k, v in qmd_env.items() if k != "MEMINDEX_QMD_NO_DAEMON"}
    ws = workspace
    qmd(env, ws, "collection", "add", str(ws / "memory"), "--name", "m", "--mask", "**/*.md")
    qmd(env, ws, "update")
    sock = Path(env["XDG_CACHE_HOME"]) / "memindex-qmd" / "daemon.sock"
    qmd(env, ws, "search", "KESTREL-0429", "--json")  # starts the warm daemon
    wait_for(lambda: rpc(sock, "ping")["ok"], timeout=60)
    pid = int(rpc(sock, "status")["daemon"]["pid"])
    os.kill(pid, signal.SIGSTOP)
    try:
        r = qmd(env, ws, "search", "KESTREL-0429", "--json")
        assert r.returncode == 0 and json.loads(r.stdout), r.stderr
        assert "did not answer" in r.stderr and "searching the index directly" in r.stderr
        write(ws, "memory/2026-11-18.md", "# 2026-11-18\n\n- Filed ticket PLOVER-0707.\n")
        t0 = time.monotonic()
        up = qmd(env, ws, "update")
        assert up.returncode == 0, up.stderr
        assert time.monotonic() - t0 < 60 and "stopping it" in up.stderr
        assert not _running(pid)
        found = json.loads(qmd(env, ws, "search", "PLOVER-0707", "--json", "-n", "1").stdout)
        assert [f["file"] for f in found] == ["qmd://m/2026-11-18.md"]
    finally:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        if sock.exists():
            with contextlib.suppress(Exception):
                os.kill(int(rpc(sock, "status")["daemon"]["pid"]), signal.SIGTERM)


def _running(pid: int) -> bool:
    """``pid`` is a live process (not gone, and not a zombie nobody reaped)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    return True


@pytest.mark.slow
def test_a_session_export_is_redacted_as_every_transcript(
    qmd_env: dict[str, str], workspace: Path
) -> None:
    """OpenClaw's QMD backend exports transcripts as `# Session <id>` Markdown; in a
    collection they reached QMD's surfaces verbatim (65 of 68 secret formats). They
    are transcripts: redacted in the index, in search snippets and in `get`. A note
    of the user's own is read as written."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "redaction_table", Path(__file__).parents[1] / "sources" / "test_redaction.py"
    )
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    SECRETS = table.SECRETS

    export = workspace / "qmd-sessions"
    body = "".join(f"\n## user\n\nNote {i}: {t}\n" for i, (_, t, _) in enumerate(SECRETS))
    write(export, "abc123.md", "# Session abc123\n" + body)
    write(
        export,
        "mine.md",
        "# My notes\n\nThe example key in the docs: sk-proj-abcdefghijklmnop1234\n",
    )
    ws = workspace
    qmd(qmd_env, ws, "collection", "add", str(export), "--name", "sessions", "--mask", "**/*.md")
    assert qmd(qmd_env, ws, "update").returncode == 0
    index = (Path(qmd_env["XDG_CACHE_HOME"]) / "qmd").glob("**/*")
    stored = b"".join(p.read_bytes() for p in index if p.is_file())
    got = qmd(qmd_env, ws, "get", "qmd://sessions/abc123.md").stdout
    snippets = "".join(
        qmd(qmd_env, ws, "search", f"Note {i}", "--json", "-n", "3").stdout
        for i in range(0, len(SECRETS), 7)
    )
    leaks = [
        name
        for name, _, secret in SECRETS
        if secret in got or secret in snippets or secret.encode() in stored
    ]
    assert leaks == []
    assert "Note 0:" in got and "[REDACTED]" in got
    mine = qmd(qmd_env, ws, "get", "qmd://sessions/mine.md").stdout
    assert "sk-proj-abcdefghijklmnop1234" in mine  # the user's own note, as written
