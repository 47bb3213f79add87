"""``memindex-qmd``: a stand-in for the ``qmd`` command that OpenClaw's QMD manager runs.

    collection list [--json] | collection add PATH --name N [--mask GLOB]
    collection remove NAME | update | embed
    search|vsearch|query QUERY [--json] [-n N] [-c NAME ...] | get PATH[:FROM[:COUNT]]

What the manager relies on (see ARCHITECTURE.md, "QMD compatibility"): exit 0 means
success; the collection listing carries ``name``, ``path`` and ``pattern``; search
prints a JSON array of ``{docid, score, collection, file, title, snippet}`` whose
snippet starts with ``@@ -<start>,<count> @@``; ``[]`` means nothing found; an
unknown option says "unknown option" (the manager retries with ``query``); an unknown
collection says "Collection not found"; every ``docid`` is a prefix of an active
``documents.hash`` in ``$XDG_CACHE_HOME/qmd/index.sqlite`` (WAL, short transactions,
so the manager's read-only 1 ms busy timeout never trips).

Collections live in ``$XDG_CONFIG_HOME/memindex-qmd/collections.json`` and the index
in ``$XDG_CACHE_HOME/memindex-qmd/``: the manager gives each agent its own XDG dirs.
``search`` is keyword, ``vsearch`` vector-weighted, ``query`` hybrid (both fall back
to keyword without an embedding provider).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from indexer import api
from indexer.api import QmdResult, SearchResponse
from indexer.config import Config
from indexer.config.file import load_config
from indexer.engine import AgentIndex, index_location, provider
from indexer.errors import InvalidParams, MemindexError
from indexer.sources.discovery import roots_for
from indexer.surfaces.client import Client, DaemonSilent, DaemonUnavailable, RemoteError
from indexer.surfaces.qmd.collections import (
    QmdError,
    config_for,
    load_collections,
    refresh_catalogue,
    save_collections,
    search_items,
)
from indexer.surfaces.qmd.common import emit, qmd_socket
from indexer.surfaces.reading import FileService

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # QMD's wording, which the manager looks for before retrying with `query`.
        if "unrecognized arguments" in message:
            message = "unknown option: " + message.split(":", 1)[1].strip()
        raise QmdError(message)


# -- commands ------------------------------------------------------------------------


def _search(
    base: Config, mode: str, query: str, n: int, names: list[str], out: TextIO, as_json: bool
) -> None:
    cols = load_collections()
    cfg = config_for(base, cols)
    if not index_location(cfg)[1]:
        if any(name not in {c["name"] for c in cols} for name in names):
            raise QmdError(f"Collection not found: {names[0]}")
        emit([], out, as_json)
        return
    service = FileService(cfg)  # the model is loaded only for a mode that embeds
    items = search_items(
        cfg, cols, mode, query, n, names, lambda p: api.dispatch(service, "memory_search", p)
    )
    emit(items, out, as_json)


def _stop_daemon(wait_s: float = 0.0) -> None:
    """Collections changed, or ``update`` / ``embed`` is to write the index: a running
    daemon serves the old set and holds the index's writer lock, so it goes (the
    next search starts a fresh one); ``wait_s``: how long to wait for it to end."""
    sock = qmd_socket()
    if not sock.exists():
        return
    try:
        pid = int(Client(sock).status(timeout=2.0)["daemon"]["pid"])
        os.kill(pid, signal.SIGTERM)
    except (DaemonUnavailable, RemoteError, OSError, KeyError, TypeError, ValueError):
        return
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return  # gone: its lock with it
        time.sleep(0.05)


def _check_new(new: dict[str, str], cols: list[dict[str, str]]) -> None:
    """A collection ``add`` may make: a name a ``qmd://NAME/PATH`` can hold, a folder,
    and not a name already given to another folder or mask (remove that one first:
    re-pointing it dropped its documents without a word)."""
    name = new["name"]
    if not name or "/" in name or name != name.strip():
        raise QmdError(f"bad collection name {name!r}: a name without '/' or spaces around it")
    if not Path(new["path"]).is_dir():
        raise QmdError(f"{new['path']} is not a folder")
    old = next((c for c in cols if c["name"] == name), None)
    if old is not None and old != new:
        raise QmdError(
            f"Collection '{name}' already exists: {old['path']} "
            f"({old.get('pattern') or '**/*.md'}); remove it first"
        )


def _update_through_daemon(base: Config, out: TextIO) -> bool:
    """``update`` while a search's warm daemon holds the index's writer lock: the
    daemon syncs (it would refuse a second writer), then the catalogue is refreshed
    from the index. False when no daemon answers."""
    sock = qmd_socket()
    if not sock.exists():
        return False
    try:  # a warm daemon that does not answer this is stuck: it is not waited on
        Client(sock).ping(timeout=_PING_S)
    except DaemonSilent as exc:
        _stop_stuck(exc, out)
        return False
    except DaemonUnavailable:
        return False
    try:  # it answers: the sync itself may take its time (embedding a new folder)
        rep = Client(sock).reindex(timeout=600.0)
    except DaemonUnavailable:
        return False
    cols = load_collections()
    cfg = config_for(base, cols)
    with AgentIndex(cfg, readonly=True) as idx:
        docs = refresh_catalogue(cfg, cols, idx.store)
    counts = (rep.get("added", 0), rep.get("updated", 0), rep.get("removed", 0))
    out.write(_updated(len(cols), docs, *counts))
    return True


_PING_S = 3.0  # a warm daemon answers a ping at once (requests have their own threads)


def _stop_stuck(exc: DaemonSilent, out: TextIO) -> None:
    """Stop a warm daemon that took a connection and did not answer a ping (it holds
    the index's writer lock, so ``update`` could not write): memindex-qmd's own, by
    the pid its socket names; the next search starts a fresh one."""
    sys.stderr.write(f"memindex-qmd: {exc.message}: stopping it and updating directly\n")
    if exc.pid is None:
        return  # update then says the index is busy, and names who holds it
    with contextlib.suppress(OSError):
        os.kill(exc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(exc.pid, 0)
        except OSError:
            return
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        os.kill(exc.pid, signal.SIGKILL)
    time.sleep(0.2)


def _updated(cols: int, docs: int, added: int, updated: int, removed: int) -> str:
    """What ``update`` prints, through the daemon or not."""
    return (
        f"Updated {cols} collection(s): {docs} documents; {added} added, {updated} "
        f"updated, {removed} removed\n"
    )


def _daemon(base: Config) -> int:
    """Serve this agent's collections warm on ``qmd_socket()`` until idle for 10 min."""
    from indexer.api import QmdSearchRequest
    from indexer.config import Settings
    from indexer.surfaces.daemon import Daemon

    cols = load_collections()
    cfg = config_for(base, cols)

    def qmd_search(
        search: Callable[[dict[str, object]], SearchResponse], req: QmdSearchRequest
    ) -> list[QmdResult]:
        try:
            return search_items(
                cfg, cols, req.mode, req.query, req.n, list(req.collections), search
            )
        except QmdError as exc:
            raise InvalidParams(str(exc)) from exc

    d = Daemon(Settings((cfg,)), socket_path=qmd_socket(), qmd=qmd_search, idle_exit_s=600)
    return d.run()


def _get(base: Config, target: str, out: TextIO) -> None:
    """``get [qmd://]COLLECTION/PATH[:FROM[:COUNT]]``: numbered lines of a document, read
    under the rules of memory_get (a .md file the collection would index, no symlink
    anywhere, a regular file, bounded in size)."""
    m = re.match(r"^(?:qmd://)?(.+?)(?::(\d+))?(?::(\d+))?$", target)
    if m is None:
        raise QmdError(f"bad target {target!r}: expected PATH[:FROM[:COUNT]]")
    coll, _, rel = m.group(1).partition("/")
    first = int(m.group(2) or 1)
    count = int(m.group(3)) if m.group(3) else None
    if first < 1 or count == 0:
        raise QmdError(f"bad target {target!r}: lines are numbered from 1, COUNT >= 1")
    cols = load_collections()
    match = next((c for c in cols if c["name"] == coll), None)
    if match is None:
        raise QmdError(f"Collection not found: {coll}")
    # The collection is an extra path of the index: memory_get's rules decide.
    cfg = config_for(base, cols)
    folder = Path(match["path"]).expanduser().resolve()
    root = next((r for r in roots_for(cfg)[1:] if r.real == folder and not r.is_file), None)
    if root is None:
        raise QmdError(f"collection {coll}: {folder} is not a folder")
    service = FileService(cfg)
    at, left = first, count
    while left is None or left > 0:  # memory_get pages a large file: read every page
        got = api.dispatch(
            service, "memory_get", {"path": f"{root.display}/{rel}", "from": at, "lines": left}
        )
        lines = got["text"].split("\n") if got["lines"] else []
        out.writelines(f"{at + k}: {line}\n" for k, line in enumerate(lines))
        if not got["truncated"]:
            break
        at += len(lines)
        left = None if left is None else left - len(lines)


def _parser() -> _Parser:
    p = _Parser(
        prog="memindex-qmd",
        add_help=True,
        description="QMD-compatible command line backed by memindex",
    )
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    c = sub.add_parser("collection", help="manage collections")
    csub = c.add_subparsers(dest="action", required=True, parser_class=_Parser)
    lst = csub.add_parser("list", help="list collections")
    lst.add_argument("--json", action="store_true")
    add = csub.add_parser("add", help="add a collection")
    add.add_argument("path")
    add.add_argument("--name", required=True)
    add.add_argument("--mask", default="**/*.md")
    rm = csub.add_parser("remove", help="remove a collection")
    rm.add_argument("name")
    sub.add_parser("update", help="index new and changed files")
    sub.add_parser("embed", help="embed new chunks (when a provider is configured)")
    for mode in ("search", "vsearch", "query"):
        s = sub.add_parser(mode, help=f"{mode} the collections")
        s.add_argument("query")
        s.add_argument("--json", action="store_true")
        s.add_argument("-n", type=int, default=5)
        s.add_argument("-c", "--collection", action="append", default=[])
    sub.add_parser("daemon", help="serve the collections warm (started by the first search)")
    g = sub.add_parser("get", help="print a document: PATH[:FROM[:COUNT]]")
    g.add_argument("target")
    return p


def run(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    try:
        args = _parser().parse_args(list(argv))
        base = load_config(None)
        if args.cmd == "collection":
            return _collection(args, out)
        if args.cmd == "daemon":
            return _daemon(base)
        if args.cmd == "update" and _update_through_daemon(base, out):
            return 0
        if args.cmd in ("update", "embed"):
            return _update_or_embed(base, args.cmd, out)
        if args.cmd in ("search", "vsearch", "query"):
            _search(base, args.cmd, args.query, max(1, args.n), args.collection, out, args.json)
            return 0
        _get(base, args.target, out)
        return 0
    except QmdError as exc:
        err.write(f"Error: {exc}\n")
        return 1
    except (MemindexError, OSError, ValueError) as exc:
        err.write(f"Error: {getattr(exc, 'message', exc)}\n")
        return 1


def _collection(args: argparse.Namespace, out: TextIO) -> int:
    """``collection list|add|remove``."""
    cols = load_collections()
    if args.action == "list":
        listing = [
            {"name": c["name"], "path": c["path"], "pattern": c.get("pattern") or "**/*.md"}
            for c in cols
        ]
        if args.json:
            out.write(json.dumps(listing) + "\n")
        else:
            out.writelines(f"{c['name']}\t{c['path']}\t{c['pattern']}\n" for c in listing)
    elif args.action == "add":
        path = str(Path(args.path).expanduser().resolve())
        new = {"name": args.name, "path": path, "pattern": args.mask}
        _check_new(new, cols)
        if new not in cols:
            save_collections([c for c in cols if c["name"] != args.name] + [new])
            _stop_daemon()
            out.write(f"Added collection '{args.name}': {path} ({args.mask})\n")
        else:
            out.write(f"Collection '{args.name}' is already {path} ({args.mask})\n")
    else:
        if args.name not in {c["name"] for c in cols}:
            raise QmdError(f"Collection not found: {args.name}")
        save_collections([c for c in cols if c["name"] != args.name])
        _stop_daemon()
        out.write(f"Removed collection '{args.name}'\n")
    return 0


def _update_or_embed(base: Config, cmd: str, out: TextIO) -> int:
    """``update`` (index the collections, refresh QMD's catalogue) or ``embed``."""
    _stop_daemon(wait_s=30.0)  # it holds the writer lock (a search started it)
    cols = load_collections()
    cfg = config_for(base, cols)
    sel = provider(cfg) if cmd == "embed" else None
    with AgentIndex(cfg, selection=sel) as idx:  # owns the provider: closed
        if cmd == "update":
            rep = idx.sync(embed=False)
            docs = refresh_catalogue(cfg, cols, idx.store)
            out.write(_updated(len(cols), docs, rep.added, rep.updated, rep.removed))
        else:
            emb = idx.embed()
            if emb is None:
                out.write("No embedding provider configured: keyword search only\n")
            else:
                out.write(
                    f"Embedded {emb.embedded} chunks ({emb.cacheHits} from cache, "
                    f"{emb.pending} pending)\n"
                )
    return 0


def main() -> None:
    sys.exit(run(sys.argv[1:], sys.stdout, sys.stderr))
