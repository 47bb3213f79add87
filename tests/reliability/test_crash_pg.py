"""Crash consistency on PostgreSQL: SIGKILL a daemon writing into the suite's own
PostgreSQL (conftest ``pg_server``) during syncs, ten times; after every kill the
agent's published rows pass ``consistency()`` (no orphan, duplicate or missing chunk,
keyword or vector rows), and after a restart its memory files' rows equal a clean
build of the same files into the same database (row counts per table, the chunk
set, and searches), and every transcript message is found. (A transcript's chunks
are cut where the daemon found its messages: read as it grew, they are not those of
one read of the whole file.)
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from daemon_util import DaemonProc, child_env, rpc, wait_for
from test_crash import N_FILES, SEED, assert_every_message_found, config_file, write_round

from indexer.config import Config, SessionsConfig, StoreConfig
from indexer.engine import AgentIndex
from indexer.store.postgres.backend import PostgresBackend

pytestmark = [pytest.mark.slow, pytest.mark.pg]

PUBLISHED = "agent=%s AND gen=(SELECT published FROM agents WHERE agent=%s)"


def query(url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            return conn.execute(sql, args).fetchall()
    except psycopg.errors.UndefinedTable:  # before the first migration
        return []


def tagged(url: str, tag: str) -> int:
    """Files of agent main whose published chunks hold ``tag``."""
    rows = query(
        url,
        f"SELECT count(DISTINCT path) FROM chunks WHERE {PUBLISHED} AND text LIKE %s",
        "main", "main", f"%{tag}%",
    )  # fmt: skip
    return int(rows[0][0]) if rows else 0


def problems(url: str, agent: str = "main") -> list[str]:
    backend = PostgresBackend(url, agent)
    if not backend.exists():
        return []
    with backend.open(readonly=True) as s:
        return s.consistency()


MEMORY_TERMS = " AND id IN (SELECT id FROM chunks WHERE source='memory' AND " + PUBLISHED + ")"


def table_counts(url: str, agent: str) -> dict[str, int]:
    """Rows of memory files (and every agent's transcript cursors and skips)."""
    sql = "SELECT count(*) FROM {} WHERE " + PUBLISHED
    got = {
        t: int(query(url, sql.format(t), agent, agent)[0][0])
        for t in ("session_cursors", "skipped")
    }
    for t in ("files", "chunks"):
        got[t] = int(query(url, sql.format(t) + " AND source='memory'", agent, agent)[0][0])
    got["chunk_terms"] = int(
        query(url, sql.format("chunk_terms") + MEMORY_TERMS, agent, agent, agent, agent)[0][0]
    )
    sql = "SELECT coalesce(sum(cardinality(terms) + cardinality(pos)), 0) FROM chunk_terms WHERE "
    got["term entries"] = int(
        query(url, sql + PUBLISHED + MEMORY_TERMS, agent, agent, agent, agent)[0][0]
    )
    return got


def chunk_set(url: str, agent: str) -> list[tuple[Any, ...]]:
    return sorted(
        query(
            url,
            "SELECT path, source, start_line, end_line, hash, dl FROM chunks "
            f"WHERE {PUBLISHED} AND source='memory'",
            agent, agent,
        )
    )  # fmt: skip


def test_kills_during_sync_on_postgresql_converge(tmp_path: Path, pg_url: str) -> None:
    ws, sessions = tmp_path / "ws", tmp_path / "sessions"
    sessions.mkdir(parents=True)
    cfg = config_file(tmp_path, ws, sessions, f'[store]\nurl = "{pg_url}"\n')
    d = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env())
    rng = random.Random(SEED + 10)
    kills = mid_sync = 0
    try:
        for r in range(10):
            write_round(ws, sessions, r)
            d.start(wait=False)
            try:
                wait_for(lambda r=r: tagged(pg_url, f"round{r}tag") > 0, timeout=90, interval=0.01)
                time.sleep(rng.uniform(0.0, 0.5))
            finally:
                d.kill()
            kills += 1
            done = tagged(pg_url, f"round{r}tag")
            mid_sync += done < N_FILES
            found = problems(pg_url)
            assert found == [], f"after kill {kills} ({done}/{N_FILES} files in): {found}"
        print(f"{kills} kills, {mid_sync} of them mid-sync (seed {SEED + 10})", file=sys.stderr)
        assert mid_sync >= 5

        d.start()  # converges: every file at its last version, every message indexed
        d.wait_idle(timeout=120)
        assert rpc(d.sock, "status")["sources"]["memory"]["files"] == N_FILES
        clean = Config(
            workspace=ws,
            agentId="clean",
            sessions=SessionsConfig(dir=str(sessions)),
            store=StoreConfig(url=pg_url),
        )
        with AgentIndex(clean) as idx:
            idx.sync()
            assert table_counts(pg_url, "main") == table_counts(pg_url, "clean")
            assert chunk_set(pg_url, "main") == chunk_set(pg_url, "clean")
            for q in ("round9tag note 3 of file 17", "word42", "note 3 sparrow", "File 599"):
                want = idx.search(q, max_results=8, min_score=0, sources=["memory"])["results"]
                got = rpc(
                    d.sock,
                    "memory_search",
                    {"query": q, "maxResults": 8, "minScore": 0, "sources": ["memory"]},
                )
                assert [(r["path"], r["startLine"]) for r in got["results"]] == [
                    (r["path"], r["startLine"]) for r in want
                ] and want, q
        assert_every_message_found(d.sock, 10)
        assert problems(pg_url) == []
    finally:
        d.stop()
