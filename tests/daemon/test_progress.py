"""Progress of long writing: a sync's files, then an embedding backlog across passes,
with the rate and the time left; the CLI's line on a terminal, status's line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import Runner, write

from indexer.api import ProgressState
from indexer.config import Config
from indexer.engine import AgentIndex
from indexer.indexing.progress import WorkProgress
from indexer.surfaces.cli.parts import ProgressBar, describe_progress
from providers.local_gguf import LocalGGUFProvider

pytestmark = pytest.mark.slow


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_backlog_spans_passes_and_grows_with_new_chunks() -> None:
    seen: list[ProgressState] = []
    p = WorkProgress(seen.append)
    assert p.state() is None
    p.files(3, 10)
    assert seen[-1]["phase"] == "files" and (seen[-1]["done"], seen[-1]["total"]) == (3, 10)
    p.files(10, 10)
    assert p.state() is None  # every file read: nothing to show
    p.embedding(100)
    p.embedded(40)
    p.embedding(70)  # the next pass: 60 left of the first backlog, 10 new chunks
    st = p.state()
    assert st is not None and st["phase"] == "embedding"
    assert (st["done"], st["total"]) == (40, 110)
    p.embedded(70)
    p.finished()
    assert p.state() is None
    p.embedding(5)  # a new backlog starts from zero
    st = p.state()
    assert st is not None and (st["done"], st["total"]) == (0, 5) and st["perSecond"] is None


def test_the_line_says_rate_and_time_left() -> None:
    st = ProgressState(phase="embedding", done=1200, total=5183, perSecond=9.1, etaS=437.7)
    assert describe_progress(st) == "embedding 1,200 of 5,183 chunks (23%), 9.1/s, about 7 min left"
    st = ProgressState(phase="files", done=10, total=500, perSecond=None, etaS=None)
    assert describe_progress(st) == "files 10 of 500 files (2%)"
    tty = _Tty()
    ProgressBar(tty, "indexing").show(
        ProgressState(phase="embedding", done=60, total=120, perSecond=30.0, etaS=2.0)
    )
    assert "[############............] embedding 60 of 120 chunks (50%), 30/s" in tty.getvalue()
    quiet = io.StringIO()  # not a terminal: nothing
    ProgressBar(quiet, "indexing").show(
        ProgressState(phase="embedding", done=60, total=120, perSecond=30.0, etaS=2.0)
    )
    assert quiet.getvalue() == ""


def test_an_index_run_reports_every_chunk_embedded(tmp_path: Path, model_path: Path) -> None:
    ws = tmp_path / "ws"
    for n in range(6):
        write(ws, f"memory/2026-11-0{n + 1}.md", f"# Day {n}\n\n" + "- a line of notes\n" * 40)
    cfg = Config(workspace=ws, indexPath=tmp_path / "i.sqlite")
    seen: list[ProgressState] = []
    provider = LocalGGUFProvider(model_path)
    try:
        with AgentIndex(cfg, provider=provider) as idx:
            rep = idx.sync(progress=WorkProgress(seen.append))
    finally:
        provider.close()
    files = [s for s in seen if s["phase"] == "files"]
    emb = [s for s in seen if s["phase"] == "embedding"]
    assert files and files[-1]["done"] == files[-1]["total"] == 6
    assert rep.embedding is not None and rep.embedding["embedded"] > 0
    assert emb[-1]["done"] == emb[-1]["total"] == rep.embedding["embedded"]
    assert [s["done"] for s in emb] == sorted(s["done"] for s in emb)


def test_the_daemon_shows_an_embedding_backlog_in_status(tmp_path: Path) -> None:
    """A provider slower than the daemon's embedding slice: status says how far the
    backlog has got (done of total, rising), and nothing once it is through."""
    from daemon_util import DaemonProc, child_env, rpc, wait_for
    from fake_openai import FakeOpenAI

    ws = tmp_path / "ws"
    for n in range(150):
        write(ws, f"memory/n{n:03}.md", f"# Note {n}\n\nsomething worth keeping, number {n}\n")
    fake = FakeOpenAI(dims=64).start()
    fake.delay = 0.6  # each request (16, 32, 64 chunks): 2.4 s for the backlog
    conf = write(
        tmp_path,
        "c.toml",
        f'workspace = "{ws}"\nindexPath = "{tmp_path / "i.sqlite"}"\n'
        '[provider]\nname = "openai"\nmodel = "text-embedding-3-small"\ndims = 64\n'
        f'[provider.remote]\nbaseUrl = "{fake.base_url}"\napiKey = "sk-test"\n',
    )
    d = DaemonProc(conf, tmp_path / "d.sock", child_env()).start(wait=False)
    try:
        seen: list[tuple[int, int]] = []

        def embedding_under_way() -> bool:
            p = rpc(d.sock, "status").get("progress")
            if p and p["phase"] == "embedding":
                seen.append((p["done"], p["total"]))
            return len(seen) >= 2 and seen[-1][0] > seen[0][0]

        wait_for(embedding_under_way, timeout=60, interval=0.1)
        assert all(0 <= done <= total for done, total in seen)
        assert seen[-1][1] >= 150  # the whole backlog, not one slice of it
        wait_for(lambda: rpc(d.sock, "status")["vector"]["pendingChunks"] == 0, timeout=60)
        wait_for(lambda: rpc(d.sock, "status")["progress"] is None, timeout=10)
    finally:
        d.stop()
        fake.stop()


def test_the_index_line_says_what_the_time_went_to(
    cli: Runner, tmp_path: Path, model_path: Path
) -> None:
    """Chunks written by a keyword-only index, then a model set: the second run writes
    no chunk and embeds them all, and says so (it printed "0 chunks written in 33 s")."""
    import re

    ws = tmp_path / "ws"
    for n in range(3):
        write(ws, f"memory/2026-11-0{n + 1}.md", f"# Day {n}\n\n- a line of notes {n}\n")
    assert cli("--workspace", str(ws), "index")[0] == 0
    conf = write(
        tmp_path,
        "c.toml",
        f'workspace = "{ws}"\n[provider]\nname = "local"\n'
        f'[provider.local]\nmodelPath = "{model_path}"\n',
    )
    code, out, err = cli("--config", str(conf), "index")
    assert code == 0, err
    assert re.search(r"; 0 chunks written in \d+\.\d\ds\n", out), out
    assert re.search(r"^vectors: 3 embedded in \d+\.\d\ds, 0 from cache, 0 pending$", out, re.M)
