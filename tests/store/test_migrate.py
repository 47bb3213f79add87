"""``memindex migrate --to postgresql://``: an agent's SQLite index moves into a real
PostgreSQL (the suite's own, conftest ``pg_server``) with its vectors, embedding
cache and transcript cursors, so the move costs no embedding and no re-indexing,
and searches answer the same on both stores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Runner, cli_json, write
from fake_openai import FakeOpenAI

WORDS = ["harbor", "lantern", "quartz", "meadow", "falcon", "copper", "violet", "summit"]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    f = FakeOpenAI(dims=32).start()
    yield f
    f.stop()


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- Dana keeps the harbor lantern key.\n")
    for day in range(1, 13):
        w = [WORDS[(day + k) % len(WORDS)] for k in range(4)]
        write(
            ws,
            f"memory/2026-10-{day:02d}.md",
            f"# 2026-10-{day:02d}\n\n- Saw the {w[0]} near the {w[1]}.\n"
            f"- Fact {day}: the {w[2]} code is Q{day * 7}.\n- Planned a {w[3]} trip.\n",
        )
    write(ws, "memory/empty.md", "")
    sessions = tmp_path / "sessions"
    lines = [
        json.dumps({"type": "message", "role": r, "content": t})
        for r, t in [
            ("user", "Where did we park the copper kayak?"),
            ("assistant", "The copper kayak is at the river summit dock."),
            ("user", "Remember the falcon password hint is violet."),
        ]
    ]
    lines.insert(1, "{not json")  # a gap: the chunk's text lines map to lines 1, 3, 4
    write(sessions, "s1.jsonl", "\n".join(lines) + "\n")
    return ws, sessions


def _config(tmp_path: Path, fake: FakeOpenAI, name: str, url: str = "") -> Path:
    ws, sessions = _workspace(tmp_path) if not (tmp_path / "ws").exists() else (
        tmp_path / "ws", tmp_path / "sessions"
    )  # fmt: skip
    lines = [
        f'workspace = "{ws}"',
        'agentId = "main"',
        f'indexPath = "{tmp_path / "main.sqlite"}"',
        "[sessions]",
        f'dir = "{sessions}"',
        "[provider]",
        'name = "openai"',
        "dims = 32",
        "[provider.remote]",
        f'baseUrl = "{fake.base_url}"',
        'apiKey = "sk-test"',
    ]
    if url:
        lines += ["[store]", f'url = "{url}"']
    return write(tmp_path, name, "\n".join(lines) + "\n")


QUERIES = ["harbor lantern", "copper kayak", "Q49", '"falcon password"', "violet trip", "summit"]


def _answers(cli: Runner, conf: Path, mode: str) -> list[Any]:
    got = []
    for q in QUERIES:
        res = cli_json(cli, "--config", str(conf), "search", q, "--mode", mode, "--json")
        hits = res["results"]
        got.append([(r["path"], r["startLine"], r["endLine"], r["snippetStartLine"],
                     r["snippetEndLine"], round(r["score"], 6)) for r in hits])  # fmt: skip
    return got


def test_migrate_copies_the_index_and_costs_no_embedding(
    cli: Runner, tmp_path: Path, fake: FakeOpenAI, pg_url: str
) -> None:
    on_sqlite = _config(tmp_path, fake, "sqlite.toml")
    on_pg = _config(tmp_path, fake, "pg.toml", url=pg_url)
    first = cli_json(cli, "--config", str(on_sqlite), "index", "--json")
    assert first["embedding"]["embedded"] > 0 and first["embedding"]["pending"] == 0

    out = cli_json(cli, "--config", str(on_sqlite), "migrate", "--to", pg_url, "--json")
    copied = out["agents"]["main"]
    assert copied["files"] == first["files"] + 1  # + the transcript
    assert copied["chunks"] == copied["vectors"] > 0 and copied["cursors"] == 1
    assert copied["cacheEntries"] >= copied["vectors"] and copied["orphans"] == 0
    assert "sk-" not in json.dumps(out)

    paid = fake.count("POST", "/v1/embeddings")
    again = cli_json(cli, "--config", str(on_pg), "index", "--json")
    assert (again["added"], again["updated"], again["removed"], again["chunksWritten"]) == (
        0, 0, 0, 0,
    )  # fmt: skip
    assert again["unchanged"] == first["files"] and not again.get("rebuilt")
    assert again["sessions"]["messages"] == 0  # the cursor came along
    emb = again["embedding"]
    assert (emb["embedded"], emb["cacheHits"], emb["pending"]) == (0, 0, 0)  # vectors came too
    assert fake.count("POST", "/v1/embeddings") == paid

    st_sqlite = cli_json(cli, "--config", str(on_sqlite), "status", "--json")
    st_pg = cli_json(cli, "--config", str(on_pg), "status", "--json")
    assert st_pg["sources"] == st_sqlite["sources"] and st_pg["mode"] == "hybrid"
    assert "postgresql" in st_pg and "sqlite" in st_sqlite
    assert _answers(cli, on_pg, "keyword") == _answers(cli, on_sqlite, "keyword")
    before = fake.count("POST", "/v1/embeddings")
    hybrid_pg = _answers(cli, on_pg, "hybrid")
    assert hybrid_pg == _answers(cli, on_sqlite, "hybrid")
    assert fake.count("POST", "/v1/embeddings") > before  # the queries were embedded
    assert any(hybrid_pg) and hybrid_pg[0][0][0] == "MEMORY.md"

    # a file changed after the move is indexed (and embedded) on PostgreSQL only
    write(tmp_path / "ws", "memory/2026-10-20.md", "# 2026-10-20\n\n- The ember vault moved.\n")
    after = cli_json(cli, "--config", str(on_pg), "index", "--json")
    assert after["added"] == 1 and after["embedding"]["embedded"] == 1
    hit = cli_json(cli, "--config", str(on_pg), "search", "ember vault", "--json")["results"][0]
    assert hit["path"] == "memory/2026-10-20.md"


def test_migrate_refuses_to_overwrite_or_to_race(
    cli: Runner, tmp_path: Path, fake: FakeOpenAI, pg_url: str
) -> None:
    on_sqlite = _config(tmp_path, fake, "sqlite.toml")
    code, _, err = cli("--config", str(on_sqlite), "migrate", "--to", pg_url)
    assert code == 2 and "has no SQLite index" in err
    code, _, err = cli("--config", str(on_sqlite), "migrate", "--to", "sqlite:///x")
    assert code == 2 and "postgresql://" in err

    cli_json(cli, "--config", str(on_sqlite), "index", "--json")
    code, out, err = cli("--config", str(on_sqlite), "migrate", "--to", pg_url)
    assert code == 0 and "main: 15 files" in out and "[store] url" in out, err
    code, _, err = cli("--config", str(on_sqlite), "migrate", "--to", pg_url)
    assert code == 2 and "already has an index" in err and "--replace" in err

    from indexer.config.file import load_config
    from indexer.store.postgres.backend import PostgresBackend

    cfg = load_config(_config(tmp_path, fake, "pg.toml", url=pg_url))
    with PostgresBackend(pg_url, "main").open() as writer:  # a daemon writing the agent
        code, _, err = cli("--config", str(on_sqlite), "migrate", "--to", pg_url, "--replace")
        assert code == 2 and "already has a writer" in err
        assert len(writer.file_states()) == 15
    out = cli_json(
        cli, "--config", str(on_sqlite), "migrate", "--to", pg_url, "--replace", "--json"
    )
    assert out["agents"]["main"]["files"] == 15
    backend = PostgresBackend(pg_url, cfg.agent_name)
    assert backend.abandoned() == []
    with backend.open(readonly=True) as s:  # one generation left: the new one
        assert s.generation == backend.current()
        assert s.counts()["memory"]["files"] == 14


def test_migrating_a_damaged_index_names_it_and_copies_nothing(
    cli: Runner, tmp_path: Path, fake: FakeOpenAI, pg_url: str
) -> None:
    on_sqlite = _config(tmp_path, fake, "sqlite.toml")
    cli_json(cli, "--config", str(on_sqlite), "index", "--json")
    index = tmp_path / "main.sqlite"
    real = index.resolve()
    with real.open("r+b") as f:  # the schema's pages stay readable; the rows do not
        for page in range(6, 15):  # files, chunks and their keyword index (each table's root)
            f.seek((page - 1) * 4096)
            f.write(b"\xde\xad" * 2048)
    code, _, err = cli("--config", str(on_sqlite), "migrate", "--to", pg_url)
    assert code == 2 and "Traceback" not in err, err
    assert str(index) in err and "damaged" in err and "memindex index --force" in err, err
    from indexer.store.postgres.backend import PostgresBackend

    backend = PostgresBackend(pg_url, "main")
    if backend.exists():  # the agent's row, made to hold the lock: no rows in it
        with backend.open(readonly=True) as s:
            assert s.counts() == {}
