"""What only the PostgreSQL store has, against the suite's own server (conftest
``pg_server``): searches served from ``readUrl`` (a read-only role standing in for a
replica) while writes go to ``url``, and the switch from an exact scan to the agent's
HNSW index once it holds ``HNSW_MIN`` vectors; and, on a server of its own, a daemon
riding out a restart of its database."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote, urlsplit

import numpy as np
import psycopg
import pytest
from conftest import Runner, cli_json, write
from daemon_util import DaemonProc, child_env, daemon_config, rpc, search_paths, wait_for

from indexer.errors import StoreError
from indexer.indexing.writer import CHANGES_KEPT
from indexer.store import ChunkRow, FileState
from indexer.store.postgres.backend import PostgresBackend
from indexer.store.postgres.vectors import HNSW_MIN

pytestmark = [pytest.mark.slow, pytest.mark.pg]


def _with_user(url: str, user: str, password: str) -> str:
    """``url`` (postgresql://postgres:@/db?host=...) as another role."""
    rest = url.split("@", 1)[1]
    return f"postgresql://{user}:{quote(password)}@{rest}"


def test_searches_read_from_read_url_and_writes_go_to_url(
    cli: Runner, tmp_path: Path, pg_url: str
) -> None:
    db = urlsplit(pg_url).path.lstrip("/")
    reader, nobody = f"{db}_reader", f"{db}_nobody"  # roles are the server's, not the db's
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {reader} LOGIN PASSWORD 'r3ad'")
        conn.execute(f"CREATE ROLE {nobody} LOGIN PASSWORD 'n0pe'")
        conn.execute(f"REVOKE CONNECT ON DATABASE {db} FROM PUBLIC")
        conn.execute(f"GRANT CONNECT ON DATABASE {db} TO {reader}")
        conn.execute(f"ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO {reader}")
    try:
        ws = tmp_path / "ws"
        write(ws, "MEMORY.md", "# Memory\n\n- The lighthouse keeper is called Ines.\n")

        def conf(read_url: str) -> str:
            text = f'workspace = "{ws}"\n[store]\nurl = "{pg_url}"\nreadUrl = "{read_url}"\n'
            return str(write(tmp_path, "c.toml", text))

        # a replica this role cannot reach: indexing works, searching says why not
        c = conf(_with_user(pg_url, nobody, "n0pe"))
        assert cli_json(cli, "--config", c, "index", "--json")["added"] == 1
        code, _, err = cli("--config", c, "search", "lighthouse keeper")
        assert code == 2 and nobody in err and "n0pe" not in err, err

        # a read-only role: searches and status are served from it, no write needed
        c = conf(_with_user(pg_url, reader, "r3ad"))
        hits = cli_json(cli, "--config", c, "search", "lighthouse keeper", "--json")["results"]
        assert [h["path"] for h in hits] == ["MEMORY.md"]
        assert cli_json(cli, "--config", c, "status", "--json")["sources"]["memory"]["files"] == 1
        with psycopg.connect(pg_url, autocommit=True) as conn:
            users = {u for (u,) in conn.execute("SELECT usename FROM pg_stat_activity")}
        assert reader in users
        write(ws, "memory/2026-11-02.md", "# 2026-11-02\n\n- Ines repainted the lighthouse.\n")
        assert cli_json(cli, "--config", c, "index", "--json")["added"] == 1  # through url
        hits = cli_json(cli, "--config", c, "search", "repainted", "--json")["results"]
        assert [h["path"] for h in hits] == ["memory/2026-11-02.md"]
    finally:
        from indexer.store.postgres.connect import close_pools

        close_pools()


def _index_scans(url: str, name: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname=%s",
            (name,),
        ).fetchone()
    return int(row[0]) if row else 0


def test_vectors_switch_from_an_exact_scan_to_hnsw(pg_url: str) -> None:
    backend = PostgresBackend(pg_url, "big")
    dims, per_file, files = 16, 100, HNSW_MIN // 100 + 1
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((per_file * files, dims)).astype("<f4")
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with backend.open() as s:
        s.ensure_vector_table(dims)
        with s.batch() as commit:
            for f in range(files):
                rows = [
                    ChunkRow(i + 1, i + 1, "", f"h{f}-{i}", f"note {f} {i}", f"note {f} {i}")
                    for i in range(per_file)
                ]
                s.replace_file(f"memory/{f:04d}.md", "memory", FileState(str(f), 0, 0), per_file,
                               rows)  # fmt: skip
                commit()
        ids = sorted(s.chunk_rows(range(1, 10 * per_file * files)))
        assert len(ids) == per_file * files >= HNSW_MIN
        with s.transaction():
            s.put_vectors([(i, vecs[n].tobytes()) for n, i in enumerate(ids)])
        queries = [vecs[n] for n in (3, 5000, 17000)]
        exact = [s.knn(q.tobytes(), 10) for q in queries]
        assert not s.hnsw_in_use() and s.versions()["hnsw"].startswith("no (exact scan")  # type: ignore[attr-defined,union-attr]
        name = s._hnsw_name(dims)  # type: ignore[attr-defined]
        s.upkeep(CHANGES_KEPT)  # the writer builds the agent's index between tasks
        assert s.hnsw_in_use() and s.versions()["hnsw"] == "in use"  # type: ignore[attr-defined]
    before = _index_scans(pg_url, name)
    with backend.open(readonly=True) as r:  # a reader (a search) uses it
        approx = [r.knn(q.tobytes(), 10) for q in queries]
    for n, (want, got) in enumerate(zip(exact, approx, strict=True)):
        assert got[0][0] == ids[(3, 5000, 17000)[n]] and got[0][1] < 1e-5  # itself, first
        overlap = len({i for i, _ in want} & {i for i, _ in got})
        assert overlap >= 8, (n, want, got)
    deadline = time.monotonic() + 10
    while _index_scans(pg_url, name) < before + len(queries):  # statistics lag a little
        assert time.monotonic() < deadline, "the HNSW index was not scanned"
        time.sleep(0.2)
    # A rebuild writes its generation into the same table, under the same index:
    # near copies of a query there fill the index's candidates for it. The published
    # generation still answers with its own k nearest (scanned exactly when short).
    new = backend.create()
    try:
        copies = 300
        with new.batch() as commit:
            rows = [ChunkRow(i + 1, i + 1, "", f"c{i}", f"copy {i}", f"copy {i}")
                    for i in range(copies)]  # fmt: skip
            new.replace_file("memory/copies.md", "memory", FileState("c", 0, 0), copies, rows)
            commit()
        new_ids = [i for i, _, _ in new.pending_chunks(10 * copies)]
        assert len(new_ids) == copies
        near = queries[0] + 1e-3 * rng.standard_normal((len(new_ids), dims)).astype("<f4")
        with new.transaction():
            new.put_vectors([(i, near[n].tobytes()) for n, i in enumerate(new_ids)])
        with backend.open(readonly=True) as r:
            got = r.knn(queries[0].tobytes(), 10)
        assert [i for i, _ in got] == [i for i, _ in exact[0]]
    finally:
        new.close()
        backend.discard(new.generation)


def test_the_daemon_rides_out_a_database_restart(tmp_path: Path, workspace: Path) -> None:
    """The database restarts under a running daemon (maintenance, a failover): while
    it is away a search fails at once with the reason instead of waiting out the
    pool; once it is back, the first search is answered and what changed meanwhile
    is indexed. Before, the writer kept its dead connection and never indexed again,
    and each reader failed once more on its own dead connection."""
    import pgserver

    data = tmp_path / "pg"
    srv = pgserver.get_server(data, cleanup_mode="stop")
    url = srv.get_uri()
    cfg = daemon_config(
        tmp_path, workspace, tmp_path / "sessions",
        extra=f'[sync]\nwatchDebounceMs = 200\n[store]\nurl = "{url}"\n',
    )  # fmt: skip
    d = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env()).start()
    try:
        assert search_paths(d.sock, "rye bread") == ["MEMORY.md"]  # a reader is pooled now

        srv.cleanup()  # stops the server: the daemon's connections die with it
        write(workspace, "memory/2026-11-22.md", "# 2026-11-22\n\n- The heron fishes at dawn.\n")
        for _ in range(3):  # the first finds its connections dead, the next ones none
            t0 = time.monotonic()
            with pytest.raises(RuntimeError, match="cannot connect to PostgreSQL"):
                rpc(d.sock, "memory_search", {"query": "rye bread"})
            assert time.monotonic() - t0 < 15, "waited out the pool instead of failing at once"

        srv = pgserver.get_server(data, cleanup_mode="stop")  # the same socket again
        assert srv.get_uri() == url
        assert search_paths(d.sock, "rye bread") == ["MEMORY.md"]  # no dead reader answers
        wait_for(lambda: search_paths(d.sock, "heron fishes") == ["memory/2026-11-22.md"], 60)
        st = rpc(d.sock, "status")
        assert st["errors"]["memory"] is None, st["errors"]
    finally:
        d.stop()
        srv.cleanup()


def test_the_writer_takes_its_lock_back_as_soon_as_the_database_returns(
    tmp_path: Path, workspace: Path
) -> None:
    """A restart ends the session that held the agent's writer lock. The daemon takes
    it back within a second of the server's return, without waiting for something
    to write: a second daemon for the agent (another workspace) started then is
    refused. Before, it took the lock and rebuilt the agent's index for its own
    workspace, and the first daemon answered from those rows while saying all was
    well. Every idle reader's connection died too: none of them answers."""
    import threading

    import pgserver

    data = tmp_path / "pg"
    srv = pgserver.get_server(data, cleanup_mode="stop")
    url = srv.get_uri()
    other = tmp_path / "other"
    write(other, "MEMORY.md", "# Memory\n- the otter swims in the river\n")
    extra = f'[sync]\nwatchDebounceMs = 200\n[store]\nurl = "{url}"\n'
    d = DaemonProc(
        daemon_config(tmp_path / "c1", workspace, tmp_path / "sessions", extra=extra),
        tmp_path / "run" / "one.sock",
        child_env(),
    ).start()
    second = DaemonProc(
        daemon_config(tmp_path / "c2", other, tmp_path / "sessions", extra=extra),
        tmp_path / "run" / "two.sock",
        child_env(),
    )
    try:
        searches = [
            threading.Thread(target=search_paths, args=(d.sock, "rye bread")) for _ in range(4)
        ]
        for t in searches:  # several readers pooled, each with its connection
            t.start()
        for t in searches:
            t.join()
        srv.cleanup()
        srv = pgserver.get_server(data, cleanup_mode="stop")
        assert srv.get_uri() == url
        time.sleep(3)  # nothing changes in the workspace: the daemon has nothing to write
        second.start(wait=False)
        assert second.proc is not None and second.proc.wait(timeout=60) == 2
        out = second.stop()
        assert "already has a writer" in out and "one.sock" in out, out
        for _ in range(5):  # no dead pooled reader answers any of them
            assert search_paths(d.sock, "rye bread") == ["MEMORY.md"]
        assert search_paths(d.sock, "otter") == []
        st = rpc(d.sock, "status")
        assert st["errors"]["writer"] is None and st["lastError"] is None, st
    finally:
        second.stop()
        d.stop()
        srv.cleanup()


def test_daemon_readers_take_change_versions_from_the_writer(
    tmp_path: Path, workspace: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon holds the agent's writer lock, so its readers take the change
    versions from its writer instead of asking the database at every search. They ask
    again while the writer is changing a version, and once the lock's session is
    gone (a restart, a terminated backend): from then on another process may write,
    and a reader must see what it wrote."""
    from dataclasses import replace

    from indexer.api import parse
    from indexer.config import Config
    from indexer.surfaces.agent import AgentRuntime

    cfg = Config(workspace=workspace, indexPath=tmp_path / "index.sqlite")
    rt = AgentRuntime(replace(cfg, store=replace(cfg.store, url=pg_url)))
    meta_reads: list[str] = []
    row_reads: list[str] = []
    plain = psycopg.Cursor.execute

    def counted(self: psycopg.Cursor[object], query: object, *a: object, **k: object) -> object:
        if "key IN ('chunksVersion'" in str(query):  # change_versions()
            meta_reads.append(str(query))
        if str(query).startswith("SELECT id, path, source, start_line"):  # chunk_rows()
            row_reads.append(str(query))
        return plain(self, query, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)

    def search(q: str) -> list[str]:
        req = parse("memory_search", {"query": q})[1]
        got = rt.read(lambda s: s.search(req))  # type: ignore[arg-type]
        return [r["path"] for r in got["results"]]

    def versions() -> tuple[str | None, ...]:
        return rt.read(lambda s: s.store.change_versions())

    try:
        rt.writer.sync()
        assert search("rye bread") == ["MEMORY.md"]
        meta_reads.clear()
        row_reads.clear()
        for _ in range(5):
            assert search("rye bread") == ["MEMORY.md"]
        assert meta_reads == []
        assert row_reads == []  # the rows too: kept on the board since the first search

        # a chunk rewritten: its new row is read, never the kept one
        memory = (workspace / "MEMORY.md").read_text()
        write(workspace, "MEMORY.md", memory.replace("rye bread", "rye toast"))
        rt.writer.sync()
        got = rt.read(lambda s: s.search(parse("memory_search", {"query": "rye"})[1]))
        assert [r["path"] for r in got["results"]] == ["MEMORY.md"]  # type: ignore[index]
        assert "rye toast" in got["results"][0]["snippet"] and row_reads  # type: ignore[index]
        assert search("bread") == []  # the old row is not shown from memory

        write(workspace, "memory/2026-11-03.md", "# 2026-11-03\n\n- The heron fishes at dawn.\n")
        rt.writer.sync()
        meta_reads.clear()  # the writer's own, after its task
        assert search("heron") == ["memory/2026-11-03.md"]
        assert meta_reads == []
        row_reads.clear()
        assert search("rye bread") == ["MEMORY.md"]
        assert row_reads == []  # kept across a task that changed other chunks

        # the writer changes a version: readers ask the database until its task ends
        rt.writer.store.meta_set("chunksVersion", "mid-task")
        assert versions()[0] == "mid-task" and meta_reads
        rt.writer.backend.writer_saw(rt.writer.store)
        meta_reads.clear()
        assert versions()[0] == "mid-task" and meta_reads == []

        # another generation published behind the writer's back: not put on the board
        board = rt.writer.backend.board  # type: ignore[attr-defined]
        with psycopg.connect(pg_url, autocommit=True) as conn:
            (gen,) = conn.execute("SELECT published FROM agents").fetchone()  # type: ignore[misc]
            conn.execute("UPDATE agents SET published = published + 1000")
            rt.writer.backend.writer_saw(rt.writer.store)
            assert board.get() is None
            conn.execute("UPDATE agents SET published = %s", (gen,))
        rt.writer.backend.writer_saw(rt.writer.store)
        assert board.get() is not None

        # the lock's session ends; another process writes: the readers see it
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'memindex writer'"
            )
            wait_for(
                lambda: (
                    not rt.writer.store.writer_lock.quiet(  # type: ignore[union-attr]
                        rt.writer.store.writer_lock.token()
                    )
                ),
                10,
            )  # type: ignore[union-attr]
            conn.execute("UPDATE meta SET value='elsewhere' WHERE key='chunksVersion'")
        assert versions()[0] == "elsewhere"
    finally:
        monkeypatch.undo()
        rt.close()


def _term_rows(url: str) -> dict[int, tuple[dict[str, list[int]], list[str], list[str], list[str]]]:
    """chunk_terms as {id: ({term: body positions}, heading, path, source)} (the order
    of the terms left out), each row's hashes checked against its terms."""
    out = {}
    with psycopg.connect(url) as conn:
        for cid, terms, hashes, want, body, pos, heading, path, source in conn.execute(
            "SELECT id, terms, hashes, ARRAY(SELECT memindex_term_hash(agent, gen, t) "
            "FROM unnest(terms) t), body, pos, heading, path, source FROM chunk_terms"
        ):
            assert hashes == want and len(set(hashes)) == len(terms)
            where, at = {}, 0
            for term, n in zip(terms, body, strict=True):
                where[term] = pos[at : at + n]
                at += n
            out[cid] = (where, heading, path, source)
    return out


def test_stored_term_hashes_are_memindex_term_hash(tmp_path: Path, pg_url: str) -> None:
    """The writer hashes terms with the agent/generation prefix made once per
    statement; every stored hash must be what ``memindex_term_hash`` (the query side
    and migration 0003) makes of that term, for written and for renamed rows."""
    from indexer.config import Config, StoreConfig
    from indexer.engine import AgentIndex

    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- the heron, the OTTER-1 and 東京 ünïcode\n")
    with AgentIndex(Config(workspace=ws, agentId="ag/1", store=StoreConfig(url=pg_url))) as idx:
        idx.sync()
        idx.store.rename_path("MEMORY.md", "memory/moved.md", lambda t: t)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        bad, total = conn.execute(
            "SELECT count(*) FILTER (WHERE h <> memindex_term_hash(agent, gen, t)), count(*) "
            "FROM chunk_terms, unnest(terms, hashes) AS x(t, h)"
        ).fetchone()
    assert total > 8 and bad == 0


def test_keyword_rows_of_an_older_database_move_to_chunk_terms(
    tmp_path: Path, pg_server: object, pg_url: str
) -> None:
    """0003 turns the one-row-per-token ``postings`` of a database made before it
    into ``chunk_terms``: the same rows as a fresh index writes, the same answers."""
    from test_store_contract import KEYWORD_DOCS, QUERIES

    from indexer.config import Config, ExtraPath, StoreConfig
    from indexer.engine import AgentIndex
    from indexer.search.query.parse import parse_query
    from indexer.store.postgres.schema import PG_MIGRATIONS

    for rel, text in KEYWORD_DOCS.items():
        write(tmp_path / "ws", rel, text)
    notes = (ExtraPath(path=tmp_path / "ws" / "notes"),)

    def answers(url: str) -> list[list[tuple[str, int, float]]]:
        cfg = Config(workspace=tmp_path / "ws", extraPaths=notes, store=StoreConfig(url=url))
        with AgentIndex(cfg, readonly=True) as idx:
            return [
                [(r.path, r.start_line, round(r.rank, 9))
                 for r in idx.store.fts_search(parse_query(q).keyword, 20, sources)]
                for q in QUERIES for sources in (None, ["memory"])
            ]  # fmt: skip

    cfg = Config(workspace=tmp_path / "ws", extraPaths=notes, store=StoreConfig(url=pg_url))
    with AgentIndex(cfg) as idx:
        idx.sync()
    fresh = _term_rows(pg_url)
    assert len(fresh) >= 4

    old_url = str(pg_server.get_uri("t_before_0003"))  # type: ignore[attr-defined]
    pg_server.psql("CREATE DATABASE t_before_0003;")  # type: ignore[attr-defined]
    tables = ("agents", "generations", "meta", "files", "chunks")
    with psycopg.connect(pg_url) as src, psycopg.connect(old_url) as dst:
        dst.execute("CREATE TABLE memindex_migrations(name TEXT PRIMARY KEY, "
                    "applied_at DOUBLE PRECISION NOT NULL)")  # fmt: skip
        for name, sql in PG_MIGRATIONS[:2]:
            dst.execute(sql)  # type: ignore[arg-type]
            dst.execute("INSERT INTO memindex_migrations VALUES (%s, 0)", (name,))
        for table in tables:  # the columns the old layout has (later ones are left out)
            cols = ", ".join(str(c) for (c,) in dst.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                "ORDER BY ordinal_position", (table,)))  # fmt: skip
            rows = src.execute(f"SELECT {cols} FROM {table}").fetchall()  # type: ignore[arg-type]
            marks = ", ".join(["%s"] * len(rows[0]))
            dst.cursor().executemany(f"INSERT INTO {table} ({cols}) VALUES ({marks})", rows)  # type: ignore[arg-type]
        # the old layout: a row per chunk, column and token with the token's positions
        for cid, (where, *cols) in fresh.items():
            rows = [(t, cid, 0, p) for t, p in where.items() if p]
            for col, toks in enumerate(cols, start=1):
                at: dict[str, list[int]] = {}
                for i, t in enumerate(toks):
                    at.setdefault(t, []).append(i)
                rows += [(t, cid, col, p) for t, p in at.items()]
            dst.cursor().executemany(
                "INSERT INTO postings(agent, gen, term, id, col, positions) "
                "SELECT agent, published, %s, %s, %s, %s FROM agents", rows,
            )  # fmt: skip
    try:
        want = answers(pg_url)
        assert sum(1 for a in want if a) >= 16
        cfg = replace(cfg, store=StoreConfig(url=old_url))
        AgentIndex(cfg).close()  # a writer opening it migrates it
        assert answers(old_url) == want
        assert _term_rows(old_url) == fresh
        with psycopg.connect(old_url) as conn:
            assert conn.execute("SELECT to_regclass('postings')").fetchone() == (None,)
    finally:
        from indexer.store.postgres.connect import close_pools

        close_pools()
        pg_server.psql("DROP DATABASE IF EXISTS t_before_0003 WITH (FORCE);")  # type: ignore[attr-defined]


def test_savepoints_are_sent_only_around_statements(tmp_path: Path, pg_url: str) -> None:
    """A savepoint inside a batch reaches the server only when a statement runs in
    it (a file read that writes nothing costs no round trip); one that ran and
    failed is undone alone, nested ones included, and the batch goes on."""
    wire = tmp_path / "libpq.trace"  # what reached the server, as libpq traces it
    with PostgresBackend(pg_url, "sp").open() as s, wire.open("w") as trace:
        s.db.pgconn.trace(trace.fileno())
        with s.batch():
            with s.savepoint(), s.savepoint():
                pass  # nothing ran: nothing sent
            trace.flush()
            assert "SAVEPOINT" not in wire.read_text()
            with s.savepoint():
                s.record_skip("kept.md", "memory", "kept")
                with pytest.raises(StoreError), s.savepoint():
                    s.record_skip("undone.md", "memory", "undone")
                    s._q("SELECT 1/0", keyed=False)  # the transaction is aborted here
            with s.savepoint():
                s.record_skip("after.md", "memory", "after")
        s.db.pgconn.untrace()
        sent = wire.read_text()
        assert sent.count('"SAVEPOINT memindex_') == 3, sent
        assert sent.count('"RELEASE SAVEPOINT memindex_') == 3, sent
        assert sent.count('"ROLLBACK TO SAVEPOINT memindex_1"') == 1
        assert sorted(x["path"] for x in s.skipped()) == ["after.md", "kept.md"]
        assert s.db.pending == [] and s.db.sent == []


def test_a_reader_keeps_its_prepared_statements_across_snapshots(pg_url: str) -> None:
    """A read snapshot ends with COMMIT (it is READ ONLY): on ROLLBACK psycopg drops
    every prepared statement of the connection, and a daemon's reader, polled for
    ``status`` and catching up its snapshot, would plan the same queries each time."""
    backend = PostgresBackend(pg_url, "prep")
    with backend.open() as w, w.transaction():
        w.replace_file(
            "a.md", "memory", FileState("1", 0, 0), 1, [ChunkRow(1, 1, "", "h", "t", "t")]
        )
    with backend.open(readonly=True) as s:
        for _ in range(8):
            with s.read_snapshot():
                assert s.counts()["memory"] == {"files": 1, "chunks": 1}
                assert s.change_versions()[0] is not None
        prepared = s.db.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0]
        assert prepared >= 2
        with pytest.raises(StoreError), s.read_snapshot():  # READ ONLY: writes refused
            s.meta_set("x", "y")


def test_a_writer_opened_as_another_closes_finds_the_lock_free(pg_url: str) -> None:
    """Closing a writer unlocks before the session ends: the server ends a closed
    session a moment later, and under load (two test workers) a writer opened right
    after the first closed was refused as a second writer."""
    from indexer.errors import IndexBusy
    from indexer.store.writer_lock import PgLock

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS agents (agent text primary key, writer text)")
    refused = 0
    for _ in range(100):
        lock = PgLock(pg_url, "relay", "relay-lock", "a writer", "here")
        lock.release()
        try:
            PgLock(pg_url, "relay", "relay-lock", "the next writer", "here").release()
        except IndexBusy:
            refused += 1
    assert refused == 0


def test_an_agents_rows_made_again_are_another_index(pg_url: str) -> None:
    """Every connection to one generation tells the same index (the daemon's snapshot
    and caches are kept by it); the agent's rows dropped and made again (a restore,
    a wiped schema) start from generation 1 again under the same name, and are
    another index, as an index file deleted and built again is."""
    backend = PostgresBackend(pg_url, "made-again")
    with backend.open() as w, backend.open(readonly=True) as r:
        first, gen = w.identity, w.generation
        assert r.identity == first and r.generation == gen
    time.sleep(0.01)  # generations are stamped with the time they were made
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM generations WHERE agent = 'made-again'")
        conn.execute("DELETE FROM agents WHERE agent = 'made-again'")
    with backend.open() as w:
        assert w.generation == gen and w.identity != first
