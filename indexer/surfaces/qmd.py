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
import json
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NoReturn, TextIO

from indexer import api
from indexer.api import QmdResult, SearchResponse
from indexer.config import Config, ExtraPath
from indexer.config_file import load_config
from indexer.engine import AgentIndex, index_location, provider
from indexer.errors import InvalidParams, MemindexError
from indexer.sources.discovery import roots_for
from indexer.sources.patterns import glob_match
from indexer.store import IndexStore, private_dir
from indexer.store.sqlite.qmd_catalogue import Catalogue
from indexer.surfaces.client import Client, DaemonUnavailable, RemoteError
from indexer.surfaces.qmd_common import MODES, cache_dir, config_dir, emit, qmd_socket
from indexer.surfaces.reading import FileService

__all__ = ["main"]


class QmdError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # QMD's wording, which the manager looks for before retrying with `query`.
        if "unrecognized arguments" in message:
            message = "unknown option: " + message.split(":", 1)[1].strip()
        raise QmdError(message)


# -- collections ---------------------------------------------------------------------


def load_collections() -> list[dict[str, str]]:
    f = config_dir() / "collections.json"
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except ValueError as exc:
        raise QmdError(f"{f} is not valid JSON: {exc}") from exc
    cols = data.get("collections", []) if isinstance(data, dict) else []
    return [c for c in cols if isinstance(c, dict) and {"name", "path"} <= set(c)]


def save_collections(cols: list[dict[str, str]]) -> None:
    d = config_dir()
    private_dir(d)
    tmp = d / f".collections.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"collections": cols}, indent=1), encoding="utf-8")
    os.replace(tmp, d / "collections.json")


def _config(base: Config, cols: list[dict[str, str]]) -> Config:
    """One index over the collections: the workspace is an empty folder of ours, every
    collection an extra path (so only collection files are indexed)."""
    private_dir(cache_dir() / "memindex-qmd")
    ws = cache_dir() / "memindex-qmd" / "workspace"
    private_dir(ws)
    extras = tuple(ExtraPath(Path(c["path"]), c.get("pattern") or "**/*.md") for c in cols)
    return replace(
        base,
        workspace=ws,
        extraPaths=extras,
        agentId=None,
        indexPath=cache_dir() / "memindex-qmd" / "index.sqlite",
        sessions=replace(base.sessions, enabled=False),
    )


class _Locator:
    """Maps indexed display paths to (collection, path relative to it). The roots and
    the collections' resolved folders are worked out once, not per result."""

    def __init__(self, cfg: Config, cols: list[dict[str, str]]) -> None:
        self.roots = [r for r in roots_for(cfg)[1:] if not r.is_file]
        self.bases = [
            (c["name"], Path(c["path"]).expanduser().resolve(), c.get("pattern") or "**/*.md")
            for c in cols
        ]

    def __call__(self, display: str) -> tuple[str, str] | None:
        for root in self.roots:
            prefix = root.display + "/"
            if not display.startswith(prefix):
                continue
            absolute = root.real / display[len(prefix) :]
            for name, base, pattern in self.bases:
                try:
                    rel = absolute.relative_to(base).as_posix()
                except ValueError:
                    continue
                if glob_match(rel, pattern):
                    return name, rel
        return None


# -- the documents catalogue the manager reads --------------------------------------


def _catalogue() -> Catalogue:
    return Catalogue(cache_dir() / "qmd" / "index.sqlite")


def refresh_catalogue(cfg: Config, cols: list[dict[str, str]], store: IndexStore) -> int:
    states = store.file_states("memory")
    locate = _Locator(cfg, cols)
    rows = []
    for display, st in states.items():
        where = locate(display)
        if where is not None:
            rows.append((where[0], where[1], Path(where[1]).stem, st.hash))
    with _catalogue() as catalogue:
        catalogue.replace_all(rows)
    return len(rows)


# -- commands ------------------------------------------------------------------------


def search_items(
    cfg: Config,
    cols: list[dict[str, str]],
    mode: str,
    query: str,
    n: int,
    names: list[str],
    search: Callable[[dict[str, object]], SearchResponse],
) -> list[QmdResult]:
    """QMD's result objects for a search; ``search``: memory_search through the
    method table (the direct path's service, or the daemon's)."""
    known = {c["name"] for c in cols}
    for name in names:
        if name not in known:
            raise QmdError(f"Collection not found: {name}")
    if mode not in MODES:
        raise QmdError(f"Unknown search mode: {mode}")
    # Four chunks per document asked for (SearchRequest caps it at MAX_RESULTS).
    params: dict[str, object] = {"query": query, "maxResults": max(1, n) * 4, "minScore": 0.0}
    res = search({**params, "mode": MODES[mode]})["results"]
    locate = _Locator(cfg, cols)
    items: list[QmdResult] = []
    seen: set[tuple[str, str]] = set()
    with _catalogue() as catalogue:  # one connection for the whole result list
        for r in res:
            where = locate(r["path"])
            if where is None or (names and where[0] not in names) or where in seen:
                continue  # one entry per document (its best chunk), as QMD does
            docid = catalogue.docid(*where)
            if docid is None:
                continue
            seen.add(where)
            start, end = r["snippetStartLine"], r["snippetEndLine"]
            header = f"@@ -{start},{end - start + 1} @@ (0 before, 0 after)"
            items.append(
                {
                    "docid": docid,
                    "score": round(float(r["score"]), 2),
                    "collection": where[0],
                    "file": f"qmd://{where[0]}/{where[1]}",
                    "title": r.get("heading") or Path(where[1]).stem,
                    "snippet": f"{header}\n{r['snippet']}",
                }
            )
            if len(items) >= n:
                break
    return items


def _search(
    base: Config, mode: str, query: str, n: int, names: list[str], out: TextIO, as_json: bool
) -> None:
    cols = load_collections()
    cfg = _config(base, cols)
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


def _stop_daemon() -> None:
    """Collections changed: a running daemon serves the old set, so it goes (the next
    search starts a fresh one)."""
    sock = qmd_socket()
    if not sock.exists():
        return
    try:
        pid = int(Client(sock).status(timeout=2.0)["daemon"]["pid"])
        os.kill(pid, signal.SIGTERM)
    except (DaemonUnavailable, RemoteError, OSError, KeyError, TypeError, ValueError):
        pass


def _daemon(base: Config) -> int:
    """Serve this agent's collections warm on ``qmd_socket()`` until idle for 10 min."""
    from indexer.api import QmdSearchRequest
    from indexer.config import Settings
    from indexer.surfaces.daemon import Daemon

    cols = load_collections()
    cfg = _config(base, cols)

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
    cfg = _config(base, cols)
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
        if args.cmd == "daemon":
            return _daemon(base)
        if args.cmd in ("update", "embed"):
            cols = load_collections()
            cfg = _config(base, cols)
            sel = provider(cfg) if args.cmd == "embed" else None
            with AgentIndex(cfg, selection=sel) as idx:  # owns the provider: closed
                if args.cmd == "update":
                    rep = idx.sync(embed=False)
                    docs = refresh_catalogue(cfg, cols, idx.store)
                    out.write(
                        f"Updated {len(cols)} collection(s): {docs} documents; {rep.added} "
                        f"added, {rep.updated} updated, {rep.removed} removed\n"
                    )
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


def main() -> None:
    sys.exit(run(sys.argv[1:], sys.stdout, sys.stderr))


if __name__ == "__main__":
    main()
