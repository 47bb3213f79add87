"""Entry point of ``memindex-qmd``: searches go to a warm daemon when one serves these
collections. Standard library only (and ``client``), so a search costs Python's
start-up and one socket round trip instead of importing the index code (~0.2 s).
Everything else, and a search with no daemon, runs ``indexer.surfaces.qmd``; such a
search also starts the daemon for the next ones (``MEMINDEX_QMD_NO_DAEMON=1`` turns
that off). The daemon exits after 10 idle minutes and whenever the collections change.
"""

from __future__ import annotations

import os
import subprocess
import sys

from indexer.errors import DaemonSilent, DaemonUnavailable, ForeignSocket, RemoteError
from indexer.surfaces.client import Client
from indexer.surfaces.qmd.common import MODES, cache_dir, config_dir, emit, qmd_socket

__all__ = ["main"]


def _parse(argv: list[str]) -> tuple[dict[str, object], bool] | None:
    """A search's ``qmd_search`` params and whether to print JSON, or None for
    anything unusual (the full CLI decides)."""
    mode, rest = argv[0], argv[1:]
    n, collections, as_json = 5, list[str](), False
    query = None
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--json":
            as_json = True
        elif a in ("-n", "-c", "--collection") and i + 1 < len(rest):
            i += 1
            if a == "-n":
                if not rest[i].isdigit():
                    return None
                n = max(1, int(rest[i]))
            else:
                collections.append(rest[i])
        elif a.startswith("-") or query is not None:
            return None
        else:
            query = a
        i += 1
    if query is None:
        return None
    return {"mode": mode, "n": n, "collections": collections, "query": query}, as_json


def _fast_search(argv: list[str]) -> int | None:
    parsed = _parse(argv)
    path = qmd_socket()
    if parsed is None or not path.exists():
        return None
    params, as_json = parsed
    try:
        result = Client(path).qmd_search(params, timeout=3.0)
    except RemoteError as exc:
        if "Collection not found" in exc.message:
            sys.stderr.write(f"Error: {exc.message}\n")
            return 1
        return None  # anything else: let the full CLI answer (and explain)
    except ForeignSocket as exc:  # never send a query to another user's process
        sys.stderr.write(f"Error: {exc.message}\n")
        return 1
    except DaemonSilent as exc:  # answered from the index itself, and said so
        sys.stderr.write(
            f"memindex-qmd: warning: {exc.message}; searching the index directly "
            "(changes since its last update may be missing: run memindex-qmd update)\n"
        )
        return None
    except DaemonUnavailable:
        return None
    if os.environ.get("MEMINDEX_QMD_TRACE"):
        sys.stderr.write("memindex-qmd: answered by the daemon\n")
    emit(result, sys.stdout, as_json)
    return 0


def _spawn_daemon() -> None:
    base = cache_dir() / "memindex-qmd"
    if os.environ.get("MEMINDEX_QMD_NO_DAEMON") or qmd_socket().exists():
        return
    if not (config_dir() / "collections.json").exists():
        return
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(base / "daemon.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with open(fd, "ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "indexer.surfaces.qmd", "daemon"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )


def main() -> None:
    argv = sys.argv[1:]
    if argv and argv[0] in MODES:
        rc = _fast_search(argv)
        if rc is not None:
            sys.exit(rc)
        _spawn_daemon()
    from indexer.surfaces.qmd.main import main as full

    full()
