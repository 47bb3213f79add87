"""``memindex doctor``: every check a user would otherwise do by hand, each one
reported as ok or FAIL with what to do, never a traceback. Right after install, with
no workspace given anywhere, the workspace and index checks are *todo* (the next
step, not a failure): doctor then checks the installation."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from indexer.config import Config, default_config_path
from indexer.errors import DaemonUnavailable, MemindexError
from indexer.surfaces.client import Client
from indexer.surfaces.server import SOCKET_PATH_MAX

__all__ = ["TODO", "checks", "install_checks"]

TODO = "todo: "  # a detail that starts so names a step not taken yet (ok, not failed)


def _check(got: list[tuple[str, bool, str]], name: str, fn: Callable[[], str]) -> None:
    try:
        detail = fn()
        got.append((name, True, str(detail)))
    except Exception as exc:  # a doctor reports, it does not crash
        msg = exc.message if isinstance(exc, MemindexError) else f"{type(exc).__name__}: {exc}"
        got.append((name, False, msg))


def install_checks() -> list[tuple[str, bool, str]]:
    """The checks of the installation, which need no config: the tokenizer and
    sqlite-vec (run on their own when the config cannot be read)."""
    from indexer.sources.tokenizer import get_counter
    from indexer.store import Store

    got: list[tuple[str, bool, str]] = []
    _check(
        got,
        "tokenizer",
        lambda: f"cl100k_base offline, 'hello world' = {get_counter()(['hello world'])[0]} tokens",
    )

    def vec() -> str:
        import tempfile

        with tempfile.TemporaryDirectory() as d, Store(Path(d) / "probe.sqlite") as st:
            if st.vec_version is None:
                raise RuntimeError(st.vector_error or "sqlite-vec not loaded")
            return f"sqlite-vec {st.vec_version} loads"

    _check(got, "sqlite-vec", vec)
    return got


def checks(cfg: Config) -> list[tuple[str, bool, str]]:
    """Each check's (name, ok, detail), in order (a *todo* is ok, its detail starting
    with ``TODO``)."""
    from indexer.sources.discovery import discover

    got: list[tuple[str, bool, str]] = []

    def check(name: str, fn: Callable[[], str]) -> None:
        _check(got, name, fn)

    check("config", lambda: str(cfg.source or "defaults (no config file)"))
    first_run = cfg.workspace is None and cfg.source is None  # nothing set up yet
    if first_run:
        where = default_config_path()
        todo = (
            "none yet: pass --workspace DIR (the folder holding MEMORY.md and memory/), set "
            f"'workspace' in {where}, or install OpenClaw (~/.openclaw/workspace is used "
            "when it exists)"
        )
        got.append(("workspace", True, TODO + todo))
    else:
        check("workspace", lambda: f"{cfg.require_workspace()} ({len(discover(cfg))} memory files)")
    tokenizer, sqlite_vec = install_checks()
    got.append(tokenizer)

    if first_run:
        got.append(("index", True, TODO + "built by 'memindex index' once a workspace is set"))
    else:
        check("index", lambda: _index_check(cfg))

    got.append(sqlite_vec)

    if not first_run:
        check("transcripts", lambda: _transcripts_check(cfg))

    check("provider", lambda: _provider_check(cfg))
    got.append(
        (
            "abstain",
            True,
            "--abstain declines a question about a name memory never mentions; it cannot "
            "tell most other questions memory has no answer to from ones worded unlike "
            "their answer (measured with the bundled models: docs/SEARCH.md, Knowing when "
            "nothing is relevant)",
        )
    )

    check("daemon", lambda: _daemon_check(cfg))

    return got


def _index_check(cfg: Config) -> str:
    from indexer.engine import checking, index_location

    path, _ = index_location(cfg)
    with checking(cfg) as st:
        if st is None:
            return f"{path} not built yet: run 'memindex index'"
        indexed = st.meta_get("workspace")
        current = str(cfg.require_workspace().resolve())
        if indexed is not None and indexed != current:
            raise RuntimeError(
                f"{path} holds workspace {indexed}, not {current}: another memindex "
                "with this agent id indexed another workspace into it; give one of them "
                "another agentId, then run 'memindex index'"
            )
        problems = st.consistency()
        if problems:
            raise RuntimeError(
                f"{path}: {'; '.join(problems)}; run 'memindex index --force' to rebuild it"
            )
        v = st.versions()
        if "sqlite" in v:
            sqlite = f"SQLite {v['sqlite']} via {v['binding']}"
            return f"{path}: integrity ok, tables consistent, {sqlite}"
        return f"{path}: tables consistent, " + ", ".join(f"{k} {x}" for k, x in v.items())


def _transcripts_check(cfg: Config) -> str:
    from indexer.engine import checking

    note = cfg.transcripts_note()
    if note is not None:
        return note  # not a failure: a workspace of notes has no transcripts
    sdir, db = cfg.sessions_dir(), cfg.transcript_db()
    where = [str(p) for p in (sdir, db) if p is not None and p.exists()]
    if sdir is not None and sdir.is_dir() and not os.access(sdir, os.R_OK | os.X_OK):
        raise RuntimeError(f"{sdir} cannot be read: fix its permissions")
    with checking(cfg) as st:
        if st is None:
            return f"read from {' and '.join(where)}; indexed by 'memindex index'"
        n = len(st.file_states("sessions"))
        last = json.loads(st.meta_get("lastSync") or "null")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(last["at"])) if last else "never"
    return f"{n} indexed from {' and '.join(where)}; last sync {when}"


def _provider_check(cfg: Config) -> str:
    from indexer.engine import provider as configured_provider

    sel = configured_provider(cfg)
    if sel.provider is None:
        if cfg.provider.name not in ("auto", "none"):  # asked for, and not there
            raise RuntimeError(f"provider '{cfg.provider.name}' unavailable: {sel.reason}")
        return f"none: keyword search only ({sel.reason})"
    desc = f"{sel.provider.id} {sel.provider.model} ({sel.provider.dims} dims)"
    sel.provider.embed_query("memindex doctor")
    sel.provider.close()
    return desc + ", answered a test query"


def _daemon_check(cfg: Config) -> str:
    path = cfg.socket_path()
    if len(os.fsencode(path)) > SOCKET_PATH_MAX:
        raise RuntimeError(
            f"the socket path {path} is {len(os.fsencode(path))} bytes, over the "
            f"{SOCKET_PATH_MAX} a Unix socket may have: the daemon cannot listen there; "
            "set server.socket to a shorter path"
        )
    if not path.exists():
        return f"not running (no socket at {path})"
    try:
        pong = Client(path).ping(timeout=2.0)
    except DaemonUnavailable as exc:
        raise RuntimeError(
            f"a socket is at {path} but no daemon answers ({exc.message}): it crashed or "
            "was killed. Start it again (memindex serve, or systemctl --user restart "
            "memindex); the stale socket is replaced at start"
        ) from exc
    agents = list(pong.get("agents", {}))
    problems = []
    for name in agents:  # a daemon that answers but does not index is a failure
        st = Client(path, name).status(timeout=10.0)
        if st.get("stuck") or st.get("lastError"):
            problems.append(f"agent {name}: {st.get('lastError')}")
    if problems:
        raise RuntimeError(f"daemon on {path} reports: {'; '.join(problems)}")
    return f"answering on {path}, version {pong.get('version')}, agents {agents}, no errors"
