"""The store contract (``IndexStore`` and ``Backend``), run against both stores:
SQLite files and a real PostgreSQL with pgvector that the suite starts (conftest's
``pg_server``): among it one writer per agent (a second is refused naming the
first, a killed writer's lock is freed, a rebuild keeps it). Then what only a
shared database has: agents kept apart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import SQLITE_AND_PG, write

from indexer.config import Config, StoreConfig
from indexer.engine import AgentIndex
from indexer.errors import IndexBusy, StoreError
from indexer.search.query.parse import parse_query
from indexer.sources.text import index_text
from indexer.store import ChunkRow, FileState, NewFile
from indexer.store.backend import Backend, backend_for

REPO = Path(__file__).resolve().parents[2]
Req = pytest.FixtureRequest


def _config(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, agent: str = "main"
) -> Config:
    ws = tmp_path / f"ws-{agent}"
    ws.mkdir(parents=True, exist_ok=True)
    if kind == "sqlite":
        return Config(workspace=ws, agentId=agent, indexPath=tmp_path / f"{agent}.sqlite")
    url = request.getfixturevalue("pg_url")
    return Config(workspace=ws, agentId=agent, store=StoreConfig(url=url))


@pytest.fixture(params=SQLITE_AND_PG)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def backend(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Backend:
    return backend_for(_config(kind, tmp_path, request))


def rows(*texts: str) -> list[ChunkRow]:
    return [ChunkRow(i + 1, i + 1, "", f"h-{t}", t, t) for i, t in enumerate(texts)]


def test_files_chunks_and_ids_that_only_grow(backend: Backend) -> None:
    with backend.open() as s:
        with s.transaction():
            s.replace_file("a.md", "memory", FileState("1", 5, 6), 2, rows("one", "two"))
            s.replace_file("b.md", "memory", FileState("1", 0, 0), 2, rows("three", "four"))
        assert s.file_states()["a.md"] == FileState("1", 5, 6)
        assert s.file_lines("b.md") == 2
        assert s.counts()["memory"] == {"files": 2, "chunks": 4}
        b_ids = sorted(i for i, r in s.chunk_rows(range(1, 10_000)).items() if r.path == "b.md")
        with s.transaction():
            s.replace_file("b.md", "memory", FileState("2", 0, 0), 1, rows("five"))
        new = [i for i, r in s.chunk_rows(range(1, 10_000)).items() if r.path == "b.md"]
        assert len(new) == 1 and new[0] > max(b_ids)
        assert s.chunk_rows(new)[new[0]].text == "five"
        with s.transaction():
            assert s.delete_file("b.md") == 1
        assert "b.md" not in s.file_states() and s.has_source("memory")


def test_replacing_a_file_keeps_its_unchanged_chunks(backend: Backend) -> None:
    """A chunk equal to the one stored (lines, heading, text hash) keeps its id and
    vector; only the others are deleted and inserted, and the change feed lists only
    those (a line appended to a long log rewrote every chunk of it, embedding and
    change feed included). A chunk whose lines moved is a new chunk."""
    with backend.open() as s:
        with s.transaction():
            s.replace_file("a.md", "memory", FileState("1", 0, 0), 3, rows("x", "y", "z"))
        ids = sorted(s.chunk_rows(range(1, 10_000)))
        s.ensure_vector_table(2)
        with s.transaction():
            s.put_vectors([(i, np.ones(2, "<f4").tobytes()) for i in ids])
        start = s.change_seq()
        with s.transaction():  # "z" rewritten, "w" appended
            got = s.replace_file(
                "a.md", "memory", FileState("2", 0, 0), 4, rows("x", "y", "Z", "w")
            )
        assert got == (1, 2)
        now = s.chunk_rows(range(1, 10_000))
        assert sorted(now)[:2] == ids[:2] and ids[2] not in now
        assert [r.text for _, r in sorted(now.items())] == ["x", "y", "Z", "w"]
        assert s.pending_count() == 2 and {i for i, _s, _v in s.vector_rows(ids[:2])} == set(
            ids[:2]
        )
        assert s.file_states()["a.md"] == FileState("2", 0, 0) and s.file_lines("a.md") == 4
        ch = s.changes_since(start)
        assert ch is not None and ch.deleted == [ids[2]]
        with s.transaction():  # a line inserted on top: every chunk's lines moved
            moved = [ChunkRow(i + 2, i + 2, "", f"h-{t}", t, t) for i, t in enumerate("xyZw")]
            assert s.replace_file("a.md", "memory", FileState("3", 0, 0), 5, moved) == (4, 4)
        with s.transaction():  # the same rows again: nothing to do
            assert s.replace_file("a.md", "memory", FileState("4", 0, 0), 5, moved) == (0, 0)
        assert s.counts()["memory"] == {"files": 1, "chunks": 4}
        assert s.file_states()["a.md"] == FileState("4", 0, 0)


def test_a_transcript_chunks_line_offsets_round_trip(backend: Backend) -> None:
    """``lines`` (a transcript chunk's text line -> file line) comes back from reads
    by id and from keyword search."""
    chunk = ChunkRow(2, 6, "", "h-t", "User: wombat\nAssistant: creek", "wombat creek", "0,4")
    with backend.open() as s:
        with s.transaction():
            s.append_chunks("sessions/t.jsonl", "sessions", FileState("1", 0, 0), 6, [chunk])
        (row,) = s.chunk_rows(range(1, 10_000)).values()
        assert row.lines == "0,4" and row.file_line(1) == 6 and row.text_line(6) == 1
        (hit,) = s.fts_search(parse_query("creek").keyword, 5)
        assert hit.lines == "0,4" and hit.text_line(4) == -1


def test_new_files_written_together_are_each_whole(backend: Backend) -> None:
    """``append_files`` (the pipeline's write of new files, one statement on
    PostgreSQL): each file's row, chunks and keyword rows as if written alone, an
    empty file among them; all of them rolled back together."""
    files = [
        NewFile("a.md", "memory", FileState("ha", 1, 10), 3, rows("alpha one", "alpha two")),
        NewFile("empty.md", "memory", FileState("he", 2, 0), 0, []),
        NewFile("sessions/b.jsonl", "sessions", FileState("hb", 3, 20), 1, rows("bravo wombat")),
    ]
    with backend.open() as s:
        with pytest.raises(RuntimeError), s.transaction():
            s.append_files(files)
            raise RuntimeError("crash after the write")
        assert s.file_states() == {}
        with s.transaction():
            assert s.append_files(files) == 3
        assert s.file_states() == {f.path: f.state for f in files}
        assert [s.file_lines(f.path) for f in files] == [3, 0, 1]
        got = sorted(
            (r.path, r.source, r.start_line, r.text)
            for r in s.chunk_rows(range(1, 10_000)).values()
        )
        assert got == [("a.md", "memory", 1, "alpha one"), ("a.md", "memory", 2, "alpha two"),
                       ("sessions/b.jsonl", "sessions", 1, "bravo wombat")]  # fmt: skip
        assert s.counts() == {"memory": {"files": 2, "chunks": 2},
                              "sessions": {"files": 1, "chunks": 1}}  # fmt: skip
        (hit,) = s.fts_search(parse_query("wombat").keyword, 5)
        assert (hit.path, hit.source, hit.text) == ("sessions/b.jsonl", "sessions", "bravo wombat")
        assert {h.path for h in s.fts_search(parse_query("alpha").keyword, 5)} == {"a.md"}


def test_a_failed_transaction_leaves_nothing(backend: Backend) -> None:
    with backend.open() as s:
        with pytest.raises(RuntimeError), s.transaction():
            s.replace_file("a.md", "memory", FileState("1", 0, 0), 1, rows("lost"))
            raise RuntimeError("crash mid-file")
        assert s.file_states() == {} and s.counts() == {}


def test_a_batch_changes_the_chunks_version_even_when_a_file_rolls_back(
    backend: Backend, kind: str
) -> None:
    """Readers learn of a commit from the generation's chunksVersion: however a batch's
    files fare (the first one's savepoint rolled back after it wrote), a batch that
    changed chunks commits a new version. PostgreSQL writes it once per transaction."""
    writes: list[str] = []
    with backend.open() as s, backend.open(readonly=True) as reader:
        if kind == "postgresql":
            plain = s.meta_set

            def counted(key: str, value: str) -> None:
                writes.append(key)
                plain(key, value)

            s.meta_set = counted  # type: ignore[method-assign]
        before = reader.change_versions()[0]
        versions = []
        for batch in (("a.md", "b.md", "c.md"), ("d.md",)):
            with s.batch():
                with pytest.raises(RuntimeError), s.savepoint():
                    s.append_chunks("lost.md", "memory", FileState("1", 0, 0), 1, rows("x"))
                    raise RuntimeError("this file fails after writing")
                for path in batch:
                    with s.savepoint():
                        s.append_chunks(path, "memory", FileState("1", 0, 0), 1, rows(path))
            versions.append(reader.change_versions()[0])
            assert "lost.md" not in s.file_states()
        assert len({before, *versions}) == 3, (before, versions)
        hits = s.fts_search(parse_query("d.md").keyword, 5)
        assert [h.path for h in hits] == ["d.md"]
        for path in ("e.md", "f.md"):  # a savepoint outside a batch commits on its own
            with s.savepoint():
                s.append_chunks(path, "memory", FileState("1", 0, 0), 1, rows(path))
            versions.append(reader.change_versions()[0])
        assert len({before, *versions}) == 5, (before, versions)
    if kind == "postgresql":  # per batch: the rolled-back file's, then one for the rest
        assert writes.count("chunksVersion") == 6, writes


def test_change_feed_lists_deleted_embedded_and_moved(backend: Backend) -> None:
    with backend.open() as s:
        with s.transaction():
            s.replace_file("a.md", "sessions", FileState("1", 0, 0), 2, rows("one", "two"))
        start = s.change_seq()
        (a, b) = sorted(s.chunk_rows(range(1, 10_000)))
        s.ensure_vector_table(3)
        with s.transaction():
            s.put_vectors([(a, np.ones(3, "<f4").tobytes())])
        mid = s.catch_up(start, 0, True)  # chunks above id 0, vectors embedded since
        assert mid is not None and [c.id for c in mid.new] == [a, b]
        assert [(r[0], r[1]) for r in mid.embedded] == [(a, "sessions")]
        with s.transaction():
            s.rename_path("a.md", "a2.md", lambda t: t)
        with s.transaction():
            s.delete_file("a2.md")
        ch = s.changes_since(start)
        assert ch is not None and ch.seq == s.change_seq() > start
        assert a in ch.embedded and sorted(ch.moved) == [a, b] and sorted(ch.deleted) == [a, b]
        # A snapshot's catch-up reads the same feed, and what its parts need, at once.
        got = s.catch_up(start, 0, True)
        assert got is not None and got.changes == ch and got.new == [] and got.embedded == []
        assert s.catch_up(start, None, False) == replace(got, new=[], embedded=[])
        assert s.prune_changes(0) > 0 and s.changes_since(start) is None
        assert s.catch_up(start, 0, True) is None  # pruned past it: read everything again


def test_vectors_knn_cache_and_pending(backend: Backend) -> None:
    with backend.open() as s:
        with s.transaction():
            s.replace_file("a.md", "memory", FileState("1", 0, 0), 3, rows("x", "y", "z"))
        ids = sorted(s.chunk_rows(range(1, 10_000)))
        assert s.pending_count() == 3 and not s.any_embedded()
        s.ensure_vector_table(4)
        vecs = {i: np.eye(4, dtype="<f4")[n] for n, i in enumerate(ids)}
        with s.transaction():
            s.put_vectors([(i, v.tobytes()) for i, v in vecs.items()])
        assert s.vector_dims() == 4 and s.pending_count() == 0 and s.any_embedded()
        q = np.array([0.1, 0.9, 0.0, 0.0], "<f4")
        near = s.knn(q.tobytes(), 2)
        assert near[0][0] == ids[1] and near[0][1] < near[1][1]
        assert [(i, v) for i, _s, v in s.vector_rows([ids[0]])] == [
            (ids[0], vecs[ids[0]].tobytes())
        ]
        assert [r[0] for r in s.vector_rows(ids)] == ids
        assert sorted(r[0] for r in s.all_vectors()) == ids
        s.cache_put("p/m", 4, [("h1", vecs[ids[0]].tobytes()), ("h2", vecs[ids[1]].tobytes())])
        assert set(s.cache_get("p/m", ["h1", "h2", "nope"])) == {"h1", "h2"}
        assert s.cache_prune(1) == 1 and s.cache_count() == 1
        with s.transaction():
            s.drop_vectors()
        assert s.pending_count() == 3 and not s.has_vectors()


def test_cursors_skips_and_batch_jobs(backend: Backend) -> None:
    from indexer.store import SessionCursor

    with backend.open() as s:
        c = SessionCursor("sessions/a.jsonl", 1, 2, 300, 4, "abc", 64, 1)
        s.put_session_cursor(c)
        assert s.session_cursors() == {c.path: c}
        s.sync_skips("memory", [("big.md", "too large")])
        assert [x["path"] for x in s.skipped()] == ["big.md"]
        s.prune_skips(set(), "memory")
        assert s.skipped() == []
        s.save_batch_job("job1", "openai", ["h1", "h2"])
        assert s.batch_jobs("openai") == {"job1": ["h1", "h2"]}
        s.delete_batch_job("job1")
        assert s.all_batch_jobs() == []


def test_a_sync_claims_the_index_and_records_its_end(backend: Backend) -> None:
    """``begin_files`` claims the index for a workspace and its settings (emptied
    when it held another's rows, or forced) and reads what a sync compares against;
    ``end_files`` records the sync and, after a whole pass, prunes the skips."""
    with backend.open() as s:
        first = s.begin_files("memory", workspace="/ws/a", fingerprint="fp1", force=False)
        assert (first.cleared, first.known, first.skipped) == (None, {}, [])
        with s.transaction():
            s.replace_file("a.md", "memory", FileState("1", 5, 6), 1, rows("one"))
            s.record_skip("big.md", "memory", "too large")
            s.record_skip("sessions/x.jsonl", "sessions", "bad line")
        again = s.begin_files("memory", workspace="/ws/a", fingerprint="fp1", force=False)
        assert again.cleared is None and list(again.known) == ["a.md"]
        assert [x["path"] for x in again.skipped] == ["big.md", "sessions/x.jsonl"]
        with s.transaction():
            s.end_files("memory", keep=None, report='{"files": 1}')  # a stopped pass
        assert s.meta_get("lastSync") == '{"files": 1}' and len(s.skipped()) == 2
        with s.transaction():
            s.end_files("memory", keep=set(), report='{"files": 2}')
        assert [x["path"] for x in s.skipped()] == ["sessions/x.jsonl"]  # its source only
        other = s.begin_files("memory", workspace="/ws/b", fingerprint="fp1", force=False)
        assert other.cleared == "index belonged to workspace /ws/a" and other.known == {}
        settings = s.begin_files("memory", workspace="/ws/b", fingerprint="fp2", force=False)
        assert settings.cleared == "chunking settings changed"
        forced = s.begin_files("memory", workspace="/ws/b", fingerprint="fp2", force=True)
        assert forced.cleared == "forced"
        assert s.meta_get("workspace") == "/ws/b" and s.meta_get("fingerprint") == "fp2"


def test_a_rebuild_generation_is_invisible_until_published(backend: Backend) -> None:
    with backend.open() as s:
        with s.transaction():
            s.replace_file("a.md", "memory", FileState("1", 0, 0), 1, rows("old text"))
        before = backend.current()
        fresh = backend.create()
        with fresh.transaction():
            fresh.replace_file("a.md", "memory", FileState("2", 0, 0), 1, rows("new text"))
        assert backend.abandoned() == [fresh.generation]  # made, not published
        with backend.open(readonly=True) as r:
            assert [x.text for x in r.chunk_rows(range(1, 10_000)).values()] == ["old text"]
        backend.publish(fresh)
        assert backend.current() == fresh.generation != before
        with backend.open(readonly=True) as r:
            assert [x.text for x in r.chunk_rows(range(1, 10_000)).values()] == ["new text"]
        fresh.close()
        other = backend.create()
        gen = other.generation
        other.close()
        backend.discard(gen)
        assert backend.abandoned() == []


KEYWORD_DOCS = {
    "MEMORY.md": "# Memory\n\n## Deploys\nKESTREL-0429 blocks the deploy of src/app.py.\n"
    "The deploy runbook lives in ops/runbook.md.\n\n## Food\nDana likes rye bread and "
    "sourdough bread.\n",
    "memory/2026-11-01.md": "# 2026-11-01\n\n- Deploy went fine after the kestrel fix.\n"
    "- Bread bread bread: baked three loaves.\n- 東京で会議がありました。\n",
    "memory/2026-11-02.md": "# 2026-11-02\n\n- Read about rye sourdough starters.\n"
    "- memory.qmd.paths must list the notes folder.\n",
    "notes/trip.md": "# Trip\n\nLisbon in May; Priya lives in Lisbon.\n",
}
QUERIES = [
    "bread",
    "rye sourdough",
    "deploy kestrel",
    "KESTREL-0429",
    '"rye bread"',
    '"sourdough bread" deploy',
    "memory.qmd.paths",
    "src/app.py runbook",
    "東京 会議",
    "Lisbon Priya",
    "nothing-matches-this",
]


@pytest.mark.pg
@pytest.mark.slow
def test_keyword_ranking_is_the_same_on_both_stores(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """BM25 over the same tokens: same chunks, same order, same scores."""
    got: dict[str, list[list[tuple[str, int, float]]]] = {}
    for kind in ("sqlite", "postgresql"):
        cfg = _config(kind, tmp_path / kind, request)
        for rel, text in KEYWORD_DOCS.items():
            write(cfg.workspace, rel, text)  # type: ignore[arg-type]
        from indexer.config import ExtraPath

        cfg = replace(cfg, extraPaths=(ExtraPath(path=cfg.workspace / "notes"),))  # type: ignore[operator]
        with AgentIndex(cfg) as idx:
            idx.sync()
            out = []

            def ask(queries: list[str], out: list[list[tuple[str, int, float]]] = out) -> None:
                for q in queries:
                    for sources in (None, ["memory"]):
                        res = idx.store.fts_search(parse_query(q).keyword, 20, sources)
                        out.append([(r.path, r.start_line, round(r.rank, 9)) for r in res])

            ask(QUERIES)
            # a moved file (a rotated transcript): its path tokens and row length change
            with idx.store.transaction():
                idx.store.rename_path("notes/trip.md", "notes/lisbon/long-trip-plan.md", index_text)
            ask(["Lisbon Priya", "trip plan", "long"])
            got[kind] = out
    assert got["sqlite"] == got["postgresql"]
    assert sum(1 for r in got["sqlite"] if r) >= 16  # the queries do find things


def test_search_and_get_through_the_engine(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    cfg = _config(kind, tmp_path, request)
    write(cfg.workspace, "MEMORY.md", "# Memory\n\n- The heron nests by the pond.\n")  # type: ignore[arg-type]
    with AgentIndex(cfg) as idx:
        idx.sync()
        hits = idx.search("where does the heron nest")["results"]
        assert hits and hits[0]["path"] == "MEMORY.md" and hits[0]["startLine"] == 3
        status = idx.status()
        assert status["files"] == 1 and status["chunks"] == 1
        assert (kind in status) and ("postgresql" in status) == (kind == "postgresql")


# -- PostgreSQL only: one database, many agents ---------------------------------------


def test_agents_sharing_a_database_never_see_each_other(tmp_path: Path, pg_url: str) -> None:
    answers = {}
    for agent, pet in (("alice", "otter"), ("bob", "badger")):
        ws = tmp_path / agent
        write(ws, "MEMORY.md", f"# Memory\n\n- My pet {pet} sleeps in the shared garden shed.\n")
        cfg = Config(workspace=ws, agentId=agent, store=StoreConfig(url=pg_url))
        with AgentIndex(cfg) as idx:
            idx.sync()
    for agent in ("alice", "bob"):
        cfg = Config(workspace=tmp_path / agent, agentId=agent, store=StoreConfig(url=pg_url))
        with AgentIndex(cfg, readonly=True) as idx:
            answers[agent] = [r["snippet"] for r in idx.search("pet shared garden shed")["results"]]
    assert len(answers["alice"]) == 1 and "otter" in answers["alice"][0]
    assert len(answers["bob"]) == 1 and "badger" in answers["bob"][0]


_BUSY = "already has a writer|being written by another memindex"


def test_a_second_writer_for_an_agent_is_refused_naming_the_first(
    kind: str, tmp_path: Path, request: Req
) -> None:
    cfg = _config(kind, tmp_path, request, "solo")
    first = backend_for(cfg, note="the first one").open()
    try:
        with pytest.raises(IndexBusy, match=f"({_BUSY}).*pid {os.getpid()}.*the first one"):
            backend_for(cfg).open()
        backend_for(cfg).open(readonly=True).close()  # readers are welcome
    finally:
        first.close()
    backend_for(cfg).open().close()  # released on close


def test_a_writer_keeps_its_lock_through_a_rebuild(kind: str, tmp_path: Path, request: Req) -> None:
    """A rebuild publishes a new generation and closes the old one: the lock goes
    with the writer to the new one (it was dropped with the old one before, and
    any process could then write the agent's index)."""
    cfg = _config(kind, tmp_path, request, "solo")
    write(cfg.require_workspace(), "MEMORY.md", "# Memory\n- the heron\n")
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert idx.sync(force=True).rebuilt == "forced"
        with pytest.raises(IndexBusy):
            backend_for(cfg).open()
    backend_for(cfg).open().close()


def test_a_killed_writer_frees_its_agent(kind: str, tmp_path: Path, request: Req) -> None:
    cfg = _config(kind, tmp_path, request, "k")
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from indexer.config import Config, StoreConfig
        from indexer.store.backend import backend_for
        cfg = Config(
            workspace=Path({str(cfg.workspace)!r}), agentId="k",
            indexPath=Path({str(cfg.resolved_index_path())!r}),
            store=StoreConfig(url={cfg.store.url!r}),
        )
        s = backend_for(cfg).open()
        print("locked", flush=True)
        time.sleep(60)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"locked"
        with pytest.raises(StoreError, match=_BUSY):
            backend_for(cfg).open()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while True:  # the server notices the closed connection and drops its lock
            try:
                backend_for(cfg).open().close()
                break
            except StoreError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
    finally:
        proc.kill()
