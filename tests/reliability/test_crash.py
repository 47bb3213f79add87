"""Crash consistency: SIGKILL the daemon at random points, restart, converge.

Each round rewrites the workspace (so the restart has real work), starts the daemon,
waits until the new content is partly indexed and kills it after a random delay.
After every kill the index on disk must pass ``Store.consistency()`` (SQLite's
integrity check; no orphan, duplicate or missing chunk, FTS or vector rows), and
after the last one the converged index must equal a clean build of the same files.
The same for rebuilds (chunking changed, then an embedding model switched on): a
kill leaves the published generation untouched, and the next rebuild keeps what
the killed one embedded.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from conftest import write
from daemon_util import DaemonProc, child_env, daemon_config, rpc, wait_for

from indexer.config import Config, SessionsConfig
from indexer.engine import AgentIndex
from indexer.errors import StoreError
from indexer.store import Store
from indexer.store.sqlite.generations import abandoned

pytestmark = pytest.mark.slow

N_FILES = 600
SEED = int(os.environ.get("MEMINDEX_CRASH_SEED", "20261121"))


def write_round(ws: Path, sessions: Path, r: int) -> None:
    """Every file gets this round's tag; two transcripts get five new messages."""
    for i in range(N_FILES):
        body = "\n".join(
            f"- round{r}tag note {j} of file {i}: word{(i * 31 + j * 7 + r) % 997}"
            for j in range(24)
        )
        write(ws, f"memory/2025-{i:04d}.md", f"# File {i}\n\n{body}\n")
    for t in range(2):
        with (sessions / f"s{t}.jsonl").open("a", encoding="utf-8") as fh:
            for k in range(5):
                msg = {"type": "message", "role": "user", "content": f"msg{r}x{t}x{k} sparrow"}
                fh.write(json.dumps(msg) + "\n")


def config_file(tmp: Path, ws: Path, sessions: Path, extra: str = "") -> Path:
    return daemon_config(
        tmp,
        ws,
        sessions,
        "deltaMessages = 1\nidleFlushMs = 0\n",
        f"[sync]\nwatchDebounceMs = 100\n{extra}",
    )


def index_file() -> Path:
    return Path(os.environ["XDG_STATE_HOME"]) / "memindex" / "main.sqlite"


def tagged(tag: str) -> int:
    """Files whose indexed chunks carry ``tag`` (0 while the index is not readable)."""
    try:
        with Store(index_file(), readonly=True) as s:
            row = s.db.execute(
                "SELECT count(DISTINCT c.path) FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
                "WHERE chunks_fts MATCH ?",
                (f'"{tag}"',),
            ).fetchone()
            return int(row[0]) if row else 0
    except (StoreError, apsw.Error):
        return 0


def check_on_disk() -> list[str]:
    if not index_file().exists():
        return []
    with Store(index_file(), readonly=True) as s:
        return s.consistency()


@pytest.fixture
def stage(tmp_path: Path) -> Iterator[tuple[Path, Path, DaemonProc]]:
    ws, sessions = tmp_path / "ws", tmp_path / "sessions"
    sessions.mkdir(parents=True)
    cfg = config_file(tmp_path, ws, sessions)
    d = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env())
    yield ws, sessions, d
    d.stop()


def chunk_set(path: Path, source: str) -> list[tuple[object, ...]]:
    with Store(path, readonly=True) as s:
        return sorted(
            s.db.execute(
                "SELECT path, start_line, end_line, hash FROM chunks WHERE source = ?", (source,)
            ).fetchall()
        )


def test_kills_during_sync_never_corrupt_and_converge(
    stage: tuple[Path, Path, DaemonProc], tmp_path: Path
) -> None:
    ws, sessions, d = stage
    rng = random.Random(SEED)
    kills = mid_sync = 0
    for r in range(22):
        write_round(ws, sessions, r)
        d.start(wait=False)
        try:
            # Kill once this round's content is partly in, after a random delay.
            wait_for(lambda r=r: tagged(f"round{r}tag") > 0, timeout=60, interval=0.005)
            time.sleep(rng.uniform(0.0, 0.25))
        finally:
            d.kill()
        kills += 1
        done = tagged(f"round{r}tag")
        mid_sync += done < N_FILES
        problems = check_on_disk()
        assert problems == [], f"after kill {kills} ({done}/{N_FILES} files in): {problems}"
    print(f"{kills} kills, {mid_sync} of them mid-sync (seed {SEED})", file=sys.stderr)
    assert kills >= 20 and mid_sync >= 10

    d.start()  # converges: every file at its last version, every message indexed
    st = rpc(d.sock, "status")
    assert st["sources"]["memory"]["files"] == N_FILES
    clean = Config(
        workspace=ws,
        indexPath=tmp_path / "clean.sqlite",
        sessions=SessionsConfig(dir=str(sessions)),
    )
    with AgentIndex(clean) as idx:
        idx.sync()
    assert chunk_set(index_file(), "memory") == chunk_set(tmp_path / "clean.sqlite", "memory")
    assert_every_message_found(d.sock, 22)
    assert check_on_disk() == []


def assert_every_message_found(sock: Path, rounds: int) -> None:
    """Each transcript message ``write_round`` appended in ``rounds`` rounds is found."""
    for r in range(rounds):
        for t in range(2):
            for k in range(5):
                hit = rpc(
                    sock,
                    "memory_search",
                    {"query": f"msg{r}x{t}x{k}", "sources": ["sessions"], "minScore": 0},
                )["results"]
                assert hit, f"message msg{r}x{t}x{k} lost"


def generations() -> list[Path]:
    return sorted(index_file().parent.glob("main.g*.sqlite"))


def test_kills_during_rebuilds_keep_the_published_index(
    stage: tuple[Path, Path, DaemonProc], tmp_path: Path
) -> None:
    ws, sessions, d = stage
    rng = random.Random(SEED + 1)
    write_round(ws, sessions, 0)
    d.start()
    d.stop()
    kills = 0
    for r in range(10):
        tokens = 120 + 20 * r  # a new chunking each round: every start rebuilds
        config_file(tmp_path, ws, sessions, f"[chunking]\ntokens = {tokens}\noverlap = 20\n")
        before = set(generations())
        published = os.path.realpath(index_file())
        d.start(wait=False)
        try:
            wait_for(lambda b=before: set(generations()) - b, timeout=60, interval=0.005)
            time.sleep(rng.uniform(0.0, 0.4))
        finally:
            d.kill()
        kills += 1
        now = os.path.realpath(index_file())
        assert check_on_disk() == []
        if now == published:  # not swapped yet: the old generation still answers in full
            assert tagged("round0tag") == N_FILES
        # At most one killed build lies around (the next rebuild takes its vectors and
        # deletes it); replaced generations stay for a grace period, for readers.
        assert len(abandoned(index_file())) <= 1, generations()
    d.start()
    d.stop()
    assert check_on_disk() == []
    assert tagged("round0tag") == N_FILES
    assert abandoned(index_file()) == []
    print(f"{kills} kills during rebuilds", file=sys.stderr)


def test_kills_during_a_model_rebuild_keep_paid_vectors(tmp_path: Path) -> None:
    """Switch from model A to model B (same architecture, other weights: a new key,
    so a rebuild into a new generation) and kill the daemon while it embeds."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    from build_test_model import build

    model_a = build()
    model_b = tmp_path / "b" / model_a.name
    model_b.parent.mkdir()
    data = bytearray(model_a.read_bytes())
    data[-1] ^= 0xFF
    model_b.write_bytes(bytes(data))
    ws, sessions = tmp_path / "ws", tmp_path / "sessions"
    sessions.mkdir(parents=True)

    def notes(n: int) -> None:  # ~250 tokens each: seconds of work for the model
        for i in range(n):
            lines = [f"- fact {i}.{j}: heron {i * j % 89} waded past reed {j}" for j in range(20)]
            write(ws, f"memory/n{i:03d}.md", f"# Note {i}\n\n" + "\n".join(lines) + "\n")

    notes(10)

    def use(model: Path) -> None:
        config_file(
            tmp_path, ws, sessions, f'[provider]\nname = "local"\nlocal.modelPath = "{model}"\n'
        )

    def cached() -> int:
        """Cache rows of the newest generation being built (B's vectors)."""
        gens = [g for g in generations() if g.resolve() != index_file().resolve()]
        if not gens:
            return 0
        try:
            with Store(gens[-1], readonly=True) as s:
                return s.cache_count()
        except (StoreError, apsw.Error):
            return 0

    use(model_a)
    d = DaemonProc(tmp_path / "config.toml", tmp_path / "run" / "mi.sock", child_env())
    try:
        d.start(wait=False)
        d.wait_idle(timeout=120)
        d.stop()
        notes(200)
        use(model_b)
        rng = random.Random(SEED + 2)
        paid = 10  # A's vectors, carried into every new generation
        for _ in range(3):
            d.start(wait=False)
            try:
                wait_for(lambda p=paid: cached() > p, timeout=120, interval=0.01)
                time.sleep(rng.uniform(0.0, 0.5))
            finally:
                d.kill()
            assert check_on_disk() == []  # the published generation (A) is untouched
            paid = max(paid, cached())
        assert paid < 210, "the rebuild finished before the last kill"
        d.start(wait=False)
        d.wait_idle(timeout=120)
        st = rpc(d.sock, "status")
        assert st["mode"] == "hybrid" and st["vector"]["pendingChunks"] == 0
        # Every B vector paid for before a kill was carried over, not paid again.
        assert st["vector"]["cacheEntries"] >= paid
        d.stop()
        assert check_on_disk() == []
    finally:
        d.stop()
