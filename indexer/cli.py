"""The ``memindex`` command line. ``main(argv)`` takes its arguments so tests call it."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from .client import call
from .config import Config, Settings, load_config, load_settings
from .errors import InvalidParams, MemindexError
from .reading import daemon_socket, read_call

# Each command imports what it needs when it runs: a search, get or status answered
# by the daemon needs neither the engine nor numpy (bench/process_bench.py), nor
# logging (~10 ms): these commands set it up only when they read the file themselves.

__all__ = ["main"]

# Commands that ask the daemon when one serves the index.
_DAEMON_COMMANDS = frozenset({"index", "search", "get", "status"})


class _ProgressBar:
    """A one-line progress bar on a terminal; silent otherwise."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self.stream = stream
        self.label = label
        self.enabled = stream.isatty()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < 50:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and done < total:
            return
        self.last = now
        width = 30
        filled = int(width * done / total) if total else width
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _columns() -> int:
    """The terminal's width, as shutil.get_terminal_size() gives it."""
    with contextlib.suppress(KeyError, ValueError):
        return int(os.environ["COLUMNS"])
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no stdout, or not a terminal
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's own formatter, minus its ``import shutil`` (with bz2 and lzma, ~3 ms
    of every process) for the terminal width."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = _columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser using _Formatter; the subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="memindex",
        description="Index an agent's Markdown memory and search it (BM25 keyword search, "
        "line-range citations).",
    )
    p.add_argument(
        "--config", type=Path, help="config file (default ~/.config/memindex/config.toml)"
    )
    p.add_argument("--workspace", type=Path, help="agent workspace holding MEMORY.md and memory/")
    p.add_argument("--agent", help="agent id: names the index file <state dir>/<agent>.sqlite")
    p.add_argument(
        "--openclaw-config",
        type=Path,
        help="take agents, workspaces and memorySearch settings from an openclaw.json",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    p.add_argument("--version", action="version", version=f"memindex {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    s = sub.add_parser("index", help="index new and changed files, drop deleted ones")
    s.add_argument("--force", action="store_true", help="rebuild the whole index")
    s.add_argument("--json", action="store_true", help="print the sync report as JSON")

    s = sub.add_parser("search", help="search the index")
    s.add_argument("query", help='words, "quoted phrases", IDs, paths')
    s.add_argument("--max-results", type=int, default=None, help="number of results (default 6)")
    s.add_argument("--min-score", type=float, default=None, help="drop weaker results (0..1)")
    s.add_argument(
        "--source", choices=["memory", "sessions", "all"], default="all", help="which source"
    )
    s.add_argument(
        "--gate", action="store_true", help="answer small talk and /commands with no search"
    )
    s.add_argument(
        "--mode",
        choices=["keyword", "vector", "hybrid"],
        default=None,
        help="search mode (default: hybrid when vectors are built, else keyword)",
    )
    s.add_argument("--json", action="store_true", help="print the memory_search result as JSON")

    s = sub.add_parser("get", help="print lines of a memory file")
    s.add_argument("path", help="path as shown in search results, e.g. memory/2026-11-21.md")
    s.add_argument("--from", dest="start", type=int, default=None, help="first line (1-based)")
    s.add_argument("--lines", type=int, default=None, help="number of lines (default: all)")
    s.add_argument("--json", action="store_true", help="print the memory_get result as JSON")

    s = sub.add_parser("status", help="show what the index holds and its health")
    s.add_argument("--json", action="store_true", help="print the status object as JSON")

    s = sub.add_parser("distill", help="transcript batches for a distiller (init | run | commit)")
    s.add_argument("action", choices=["init", "run", "commit"], help="what to do")
    s.add_argument("--batch-file", help="with commit: the batch file that was consumed")

    s = sub.add_parser("mcp", help="serve memory_search / memory_get / status over MCP (stdio)")

    s = sub.add_parser("doctor", help="check config, index, extensions, provider and daemon")
    s.add_argument("--json", action="store_true", help="print the checks as JSON")

    s = sub.add_parser("serve", help="run the daemon: watch files, answer on the Unix socket")
    s.add_argument("--socket", type=Path, default=None, help="socket path (default from config)")

    s = sub.add_parser("service", help="install the daemon as a systemd / launchd user service")
    s.add_argument("action", choices=["install", "print"], help="write the unit, or print it")
    s.add_argument(
        "--kind",
        choices=["systemd", "launchd"],
        default=None,
        help="service manager (default: launchd on macOS, else systemd)",
    )
    return p


def _print_json(obj: Any, out: TextIO) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def _setup_logging(args: argparse.Namespace, err: TextIO) -> None:
    import logging

    serve = args.command == "serve"
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO if serve else logging.WARNING,
        format="%(asctime)s memindex %(levelname)s %(name)s: %(message)s"
        if serve
        else "memindex: %(levelname)s %(name)s: %(message)s",
        stream=err,
    )


def _cmd_index(cfg: Config, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    sock = daemon_socket(cfg)
    if sock is not None:  # the daemon is the one writer: let it do the work
        report = call(sock, "reindex", {"agent": cfg.agent_name, "force": args.force}, timeout=3600)
        index_path = report.pop("indexPath", str(cfg.resolved_index_path()))
    else:
        _setup_logging(args, err)
        from .indexing import Indexer
        from .selection import select_provider
        from .store import Store

        writer = Indexer(cfg, Store(cfg.resolved_index_path()), select_provider(cfg).provider)
        bar = _ProgressBar(err, "indexing")
        try:
            report = writer.sync(force=args.force, progress=bar).to_json()
        finally:
            bar.close()
            writer.store.close()
        index_path = str(writer.index_path)
    if args.json:
        _print_json({"indexPath": index_path, **report}, out)
        return 0
    r = report
    if r.get("rebuilt"):
        out.write(f"rebuilt the index ({r['rebuilt']})\n")
    out.write(
        f"{r['files']} files: {r['added']} added, {r['updated']} updated, "
        f"{r['unchanged']} unchanged, {r['removed']} removed; "
        f"{r['chunksWritten']} chunks written in {r['seconds']:.2f}s"
        + (" (through the daemon)" if sock else "")
        + "\n"
    )
    sess = r.get("sessions") or {}
    if sess.get("files"):
        out.write(
            f"sessions: {sess['files']} transcripts, {sess['messages']} new messages"
            f", {sess['malformed']} malformed lines skipped\n"
        )
    emb = r.get("embedding")
    if emb:
        out.write(
            f"vectors: {emb['embedded']} embedded, {emb['cacheHits']} from cache, "
            f"{emb['pending']} pending" + (f" ({emb['error']})" if emb["error"] else "") + "\n"
        )
    out.write(f"index: {index_path}\n")
    for s in r["skipped"] + r["errors"]:
        out.write(f"skipped {s['path']}: {s['reason']}\n")
    return 0


def _cmd_search(cfg: Config, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    params: dict[str, Any] = {"query": args.query}
    if args.max_results is not None:
        params["maxResults"] = args.max_results
    if args.min_score is not None:
        params["minScore"] = args.min_score
    if args.source != "all":
        params["sources"] = [args.source]
    if args.gate:
        params["gate"] = True
    if args.mode is not None:
        params["mode"] = args.mode
    result = read_call(cfg, "memory_search", params, direct=lambda: _setup_logging(args, err))
    if args.json:
        _print_json(result, out)
        return 0
    if result.get("skipped"):
        out.write(f"Not searched ({result['skipped']}).\n")
        return 0
    if not result["results"]:
        out.write("No results.\n")
        return 0
    for r in result["results"]:
        out.write(f"{r['score']:.3f} {r['path']}:{r['startLine']}-{r['endLine']}\n")
        for line in r["snippet"].split("\n"):
            out.write(f"    {line}\n")
        out.write("\n")
    return 0


def _cmd_get(cfg: Config, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    params: dict[str, Any] = {"path": args.path}
    if args.start is not None:
        params["from"] = args.start
    if args.lines is not None:
        params["lines"] = args.lines
    result = read_call(cfg, "memory_get", params, direct=lambda: _setup_logging(args, err))
    if args.json:
        _print_json(result, out)
        return 0
    out.write(result["text"] + ("\n" if result["text"] else ""))
    first, total = result["from"], result["totalLines"]
    if first > max(total, 1):  # nothing printed: say why rather than exit quietly
        raise InvalidParams(f"--from {first} is past the end of {result['path']} ({total} lines)")
    if result.get("truncated"):
        err.write(
            f"memindex: output stopped at the size limit; go on with --from {result['nextFrom']}\n"
        )
    return 0


def _cmd_status(cfg: Config, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    st = read_call(cfg, "status", {}, direct=lambda: _setup_logging(args, err))
    if args.json:
        _print_json(st, out)
        return 0
    out.write(f"index:     {st['indexPath']}\n")
    out.write(f"workspace: {st['workspace']}\n")
    for src, c in sorted(st["sources"].items()):
        out.write(f"{src + ':':<11}{c['files']} files, {c['chunks']} chunks\n")
    vec = st["vector"]
    if st["mode"] == "hybrid":
        out.write(
            f"mode:      hybrid ({st['provider']} {st['model']}, {st['dims']} dims; "
            f"{vec['pendingChunks']} chunks pending, {vec['cacheEntries']} cached)\n"
        )
    else:
        out.write(f"mode:      keyword ({vec['reason']})\n")
    sq = st["sqlite"]
    out.write(f"sqlite:    {sq['sqlite']} via {sq['binding']}, sqlite-vec {sq['sqliteVec']}\n")
    last = st["lastSync"]
    if last:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last["at"]))
        out.write(f"last sync: {when} ({last['files']} files)\n")
    else:
        out.write("last sync: never (run 'memindex index')\n")
    for s in st["skipped"]:
        out.write(f"skipped:   {s['path']}: {s['reason']}\n")
    d = st.get("daemon")
    if d:
        w = d["watcher"]
        out.write(
            f"daemon:    pid {d['pid']} on {d['socket']}, watcher {w['backend']}"
            + (f" ({w['reason']})" if w.get("reason") else "")
            + "\n"
        )
    else:
        out.write("daemon:    not running (read the index file directly)\n")
    return 0


def _cmd_doctor(cfg: Config, args: argparse.Namespace, out: TextIO) -> int:
    """Each check: (name, ok, detail). Exit 1 if any failed."""
    from .discovery import discover
    from .selection import select_provider
    from .store import Store
    from .tokenizer import get_counter

    checks: list[tuple[str, bool, str]] = []

    def check(name: str, fn: Any) -> None:
        try:
            detail = fn()
            checks.append((name, True, str(detail)))
        except Exception as exc:  # a doctor reports, it does not crash
            msg = exc.message if isinstance(exc, MemindexError) else f"{type(exc).__name__}: {exc}"
            checks.append((name, False, msg))

    check("config", lambda: str(cfg.source or "defaults (no config file)"))
    check("workspace", lambda: f"{cfg.require_workspace()} ({len(discover(cfg))} memory files)")
    check(
        "tokenizer",
        lambda: f"cl100k_base offline, 'hello world' = {get_counter()(['hello world'])[0]} tokens",
    )

    def index() -> str:
        path = cfg.resolved_index_path()
        if not path.exists():
            return f"{path} not built yet: run 'memindex index'"
        with Store(path, readonly=True) as st:
            problems = st.consistency()
            if problems:
                raise RuntimeError(
                    f"{path}: {'; '.join(problems)}; run 'memindex index --force' to rebuild it"
                )
            v = st.versions()
            return (
                f"{path}: integrity ok, tables consistent, SQLite {v['sqlite']} via {v['binding']}"
            )

    check("index", index)

    def vec() -> str:
        import tempfile

        with tempfile.TemporaryDirectory() as d, Store(Path(d) / "probe.sqlite") as st:
            if st.vec_version is None:
                raise RuntimeError(st.vector_error or "sqlite-vec not loaded")
            return f"sqlite-vec {st.vec_version} loads"

    check("sqlite-vec", vec)

    def provider() -> str:
        sel = select_provider(cfg)
        if sel.provider is None:
            if cfg.provider.name not in ("auto", "none"):  # asked for, and not there
                raise RuntimeError(f"provider '{cfg.provider.name}' unavailable: {sel.reason}")
            return f"none: keyword search only ({sel.reason})"
        desc = f"{sel.provider.id} {sel.provider.model} ({sel.provider.dims} dims)"
        sel.provider.embed_query("memindex doctor")
        sel.provider.close()
        return desc + ", answered a test query"

    check("provider", provider)

    def daemon() -> str:
        path = cfg.socket_path()
        if not path.exists():
            return f"not running (no socket at {path})"
        pong = call(path, "ping", timeout=2.0)
        agents = list(pong.get("agents", {}))
        problems = []
        for name in agents:  # a daemon that answers but does not index is a failure
            st = call(path, "status", {"agent": name}, timeout=10.0)
            if st.get("stuck") or st.get("lastError"):
                problems.append(f"agent {name}: {st.get('lastError')}")
        if problems:
            raise RuntimeError(f"daemon on {path} reports: {'; '.join(problems)}")
        return f"answering on {path}, version {pong.get('version')}, agents {agents}, no errors"

    check("daemon", daemon)

    if args.json:
        _print_json([{"check": n, "ok": ok, "detail": d} for n, ok, d in checks], out)
    else:
        for n, ok, d in checks:
            out.write(f"{'ok  ' if ok else 'FAIL'} {n:<11} {d}\n")
    return 0 if all(ok for _, ok, _ in checks) else 1


def _cmd_distill(args: argparse.Namespace, out: TextIO) -> int:
    """jsonl_distill's protocol: one JSON object on stdout, exit 1 on an error."""
    from .distill import Distiller

    settings = load_settings(
        args.config, workspace=args.workspace, agent=args.agent, openclaw=args.openclaw_config
    )
    d = Distiller(list(settings.agents))
    try:
        if args.action == "init":
            result = d.init()
        elif args.action == "run":
            result = d.run()
        else:
            if not args.batch_file:
                raise InvalidParams("commit needs --batch-file FILE (the file run created)")
            result = d.commit(args.batch_file)
    except MemindexError as exc:
        out.write(json.dumps({"ok": False, "error": exc.message}) + "\n")
        return 1
    out.write(json.dumps(result) + "\n")
    return 0


def _serve_options(args: argparse.Namespace) -> list[str]:
    """The global options that select what ``serve`` serves, with absolute paths."""
    out: list[str] = []
    for flag, value in (
        ("--config", args.config),
        ("--workspace", args.workspace),
        ("--openclaw-config", args.openclaw_config),
    ):
        if value is not None:
            out += [flag, str(Path(value).expanduser().absolute())]
    if args.agent is not None:
        out += ["--agent", args.agent]
    return out


def _cmd_service(args: argparse.Namespace, out: TextIO) -> int:
    from . import service

    kind = args.kind or service.default_kind()
    options = _serve_options(args)
    # What the unit will serve must load now: a unit that cannot start would only
    # restart in a loop.
    settings = load_settings(
        args.config, workspace=args.workspace, agent=args.agent, openclaw=args.openclaw_config
    )
    for agent in settings.agents:
        agent.require_workspace()
    if args.action == "print":
        out.write(service.render(kind, args=options))
        return 0
    path, start = service.install(kind, options)
    out.write(f"wrote {path}\nstart it with: {start}\n")
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from .daemon import Daemon

    def settings() -> Settings:
        return load_settings(
            args.config, workspace=args.workspace, agent=args.agent, openclaw=args.openclaw_config
        )

    daemon = Daemon(settings(), socket_path=args.socket, reload=settings)
    return daemon.run()


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = _parser().parse_args(argv)
    if args.command not in _DAEMON_COMMANDS:
        _setup_logging(args, err)
    try:
        if args.command == "serve":
            return _cmd_serve(args)
        if args.command == "distill":
            return _cmd_distill(args, out)
        if args.command == "service":
            return _cmd_service(args, out)
        cfg = load_config(
            args.config, workspace=args.workspace, agent=args.agent, openclaw=args.openclaw_config
        )
        if args.command == "index":
            return _cmd_index(cfg, args, out, err)
        if args.command == "search":
            return _cmd_search(cfg, args, out, err)
        if args.command == "get":
            return _cmd_get(cfg, args, out, err)
        if args.command == "status":
            return _cmd_status(cfg, args, out, err)
        if args.command == "doctor":
            return _cmd_doctor(cfg, args, out)
        if args.command == "mcp":
            from . import mcp_server

            return mcp_server.run(cfg)
    except MemindexError as exc:
        err.write(f"memindex: error: {exc.message}\n")
        return 2
    except KeyboardInterrupt:
        err.write("memindex: interrupted\n")
        return 130
    except BrokenPipeError:  # `memindex search … | head`: the reader has gone
        _quiet_stdout()
        return 0
    except Exception as exc:  # a bug: one line (the traceback with -v), never a crash dump
        if args.verbose:
            import logging

            _setup_logging(args, err)  # a no-op when the command set it up already
            logging.getLogger("memindex").exception("internal error")
        err.write(
            f"memindex: internal error: {type(exc).__name__}: {exc} "
            "(a bug: please report it; -v shows the traceback)\n"
        )
        return 2
    return 2


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail too."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
