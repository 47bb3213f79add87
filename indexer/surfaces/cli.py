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

from indexer.config import Config, Settings
from indexer.config_file import load_config, load_settings
from indexer.errors import DAMAGED_HINT, ConfigError, InvalidParams, MemindexError, index_damaged
from indexer.surfaces.cli_parts import ProgressBar, parser
from indexer.surfaces.client import call
from indexer.surfaces.reading import daemon_socket, read_call

# Each command imports what it needs when it runs: a search, get or status answered
# by the daemon needs neither the engine nor numpy (bench/process_bench.py), nor
# logging (~10 ms): these commands set it up only when they read the file themselves.

__all__ = ["main"]

# Commands that ask the daemon when one serves the index.
_DAEMON_COMMANDS = frozenset({"index", "search", "get", "status"})


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
        state = report.pop("providerState", None)
    else:
        _setup_logging(args, err)
        from indexer.indexing.writer import Indexer
        from indexer.selection import provider_state, select_provider
        from indexer.store.backend import backend_for

        backend = backend_for(cfg)
        sel = select_provider(cfg)
        state = provider_state(cfg, sel)
        writer = Indexer(cfg, backend.open(), sel.provider, backend=backend)
        bar = ProgressBar(err, "indexing")
        try:
            report = writer.sync(force=args.force, progress=bar).to_json()
        finally:
            bar.close()
            writer.store.close()
        index_path = backend.where
    if state and state.get("state") == "failed":  # loud: hybrid search is off
        err.write(
            f"memindex: warning: no vectors, keyword search only: the {state['name']} "
            f"provider failed: {state['reason']}\n  fix: {state['fix']}\n"
        )
    if args.json:
        _print_json({"indexPath": index_path, **report, "providerState": state}, out)
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
    if args.explain:
        params["explain"] = True
    if args.abstain:
        params["abstain"] = True
    result = read_call(cfg, "memory_search", params, direct=lambda: _setup_logging(args, err))
    if args.mode in ("hybrid", "vector") and result.get("mode") != args.mode:
        err.write(
            f"memindex: warning: --mode {args.mode} could not be honoured: "
            f"{result.get('fallback') or 'no vectors'}\n"
        )
    if args.json:
        _print_json(result, out)
        return 0
    if result.get("skipped"):
        out.write(f"Not searched ({result['skipped']}).\n")
        return 0
    if args.explain and "explain" in result:
        out.write(f"ranked by: {_parts(result['explain'])}\n\n")
    if result.get("abstained"):
        out.write(f"No results: {result['abstained']}.\n")
        return 0
    if not result["results"]:
        out.write("No results.\n")
        return 0
    for r in result["results"]:
        # the lines the snippet shows (what a citation points a reader at); the
        # chunk's range too when it is wider
        a, b = r.get("snippetStartLine", r["startLine"]), r.get("snippetEndLine", r["endLine"])
        where = f"{r['path']}:{a}" + (f"-{b}" if b != a else "")
        if (a, b) != (r["startLine"], r["endLine"]):
            where += f"  (in lines {r['startLine']}-{r['endLine']})"
        out.write(f"{r['score']:.3f} {where}\n")
        for also in r.get("also", []):
            out.write(f"      also {also['citation']}\n")
        if "explain" in r:
            out.write(f"      {_parts(r['explain'])}\n")
        for line in r["snippet"].split("\n"):
            out.write(f"    {line}\n")
        out.write("\n")
    return 0


def _parts(parts: dict[str, Any]) -> str:
    """``explain`` parts on one line: ``bm25=3.1 cosine=0.52 ...``."""
    out = []
    for k, v in parts.items():
        if isinstance(v, dict):
            v = "{" + _parts(v) + "}"
        out.append(f"{k}={v}")
    return " ".join(out)


def _cmd_get(cfg: Config, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    params: dict[str, Any] = {"path": args.path}
    if args.start is not None:
        params["from"] = args.start
    if args.lines is not None:
        params["lines"] = args.lines
    if args.raw:
        params["raw"] = True
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
    return _print_status(st, out, cfg)


def _print_status(st: dict[str, Any], out: TextIO, cfg: Config | None = None) -> int:
    if st.get("lastSync") is None and not st.get("files") and st.get("indexBytes") == 0:
        out.write(f"index:     {st['indexPath']} (not built yet: run 'memindex index')\n")
    else:
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
    ps = st.get("providerState") or {}
    if ps.get("state") == "failed":
        out.write(f"provider:  {ps['name']} FAILED: {ps['reason']}\n           fix: {ps['fix']}\n")
    elif ps.get("state") in ("ready", "configured"):
        model = f" {ps['model']}" if ps.get("model") else ""
        out.write(f"provider:  {ps['name']}{model} ({ps['state']})\n")
    sq = st.get("sqlite")
    if sq:
        out.write(f"sqlite:    {sq['sqlite']} via {sq['binding']}, sqlite-vec {sq['sqliteVec']}\n")
    pg = st.get("postgresql")
    if pg:
        out.write(
            f"store:     PostgreSQL {pg['postgresql']}, pgvector {pg['pgvector']}, "
            f"HNSW index {pg['hnsw']}\n"
        )
    last = st["lastSync"]
    if last:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last["at"]))
        out.write(f"last sync: {when} ({last['files']} files)\n")
    else:
        out.write("last sync: never (run 'memindex index')\n")
    for s in st["skipped"]:
        out.write(f"skipped:   {s['path']}: {s['reason']}\n")
    if st.get("mismatch"):
        out.write(f"MISMATCH:  {st['mismatch']}\n")
    if st.get("lastError") or st.get("stuck"):
        out.write(f"error:     {st.get('lastError')}\n")
    rec = st.get("recovered")
    if rec:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rec["at"]))
        out.write(
            f"recovered: {when}: the index file was damaged ({rec['reason']}); "
            f"rebuilt, the old file kept as {rec['keptAs']}\n"
        )
    d = st.get("daemon")
    if d:
        w = d["watcher"]
        out.write(
            f"daemon:    pid {d['pid']} on {d['socket']}, watcher {w['backend']}"
            + (f" ({w['reason']})" if w.get("reason") else "")
            + "\n"
        )
        if d.get("reloadError"):
            out.write(f"reload:    refused, the old config is in use: {d['reloadError']}\n")
        if d.get("configError"):
            out.write(f"config:    does not load (the daemon keeps its own): {d['configError']}\n")
    elif cfg is not None:
        out.write(f"daemon:    {_other_daemon(cfg)}\n")
    return 0


def _status_despite(exc: ConfigError, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``status`` when the config does not load (an edit gone wrong): a daemon running
    on the default socket still serves the config it had; show its status, and why
    the file is refused (what its next reload would say too)."""
    from indexer.config import Config

    sock = Config().socket_path()
    try:
        pong = call(sock, "ping", timeout=2.0)
        agent = args.agent or next(iter(pong.get("agents") or {}), None)
        st = call(sock, "status", {"agent": agent} if agent else {}, timeout=10.0)
    except MemindexError:
        raise exc from None
    err.write(
        f"memindex: warning: the config does not load: {exc.message}\n"
        f"  the daemon on {sock} goes on with the config it had (status below)\n"
    )
    st.setdefault("daemon", {})["configError"] = exc.message
    if args.json:
        _print_json(st, out)
        return 0
    return _print_status(st, out)


def _other_daemon(cfg: Config) -> str:
    """What the status line says when no daemon serves this index: none answers, or
    the one that does serves other agents (named, with their index)."""
    from indexer.errors import MemindexError

    sock = cfg.socket_path()
    try:
        pong = call(sock, "ping", timeout=2.0)
    except MemindexError:
        return "not running (read the index file directly)"
    served = ", ".join(f"{a} ({where})" for a, where in (pong.get("agents") or {}).items())
    return (
        f"one answers on {sock} but serves {served or 'no agent'}, not agent "
        f"{cfg.agent_name} ({cfg.index_location()}); read the index file directly "
        "(--agent names the agent a daemon serves)"
    )


def _cmd_doctor(cfg: Config, args: argparse.Namespace, out: TextIO) -> int:
    from indexer.surfaces.doctor import checks

    got = checks(cfg)
    if args.json:
        _print_json([{"check": n, "ok": ok, "detail": d} for n, ok, d in got], out)
    else:
        for n, ok, d in got:
            out.write(f"{'ok  ' if ok else 'FAIL'} {n:<11} {d}\n")
    return 0 if all(ok for _, ok, _ in got) else 1


def _cmd_distill(args: argparse.Namespace, out: TextIO) -> int:
    """jsonl_distill's protocol: one JSON object on stdout, exit 1 on an error."""
    from indexer.sources.distill import Distiller

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


def _cmd_migrate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Copy each agent's SQLite index into the database (no re-embedding)."""
    from indexer.config import is_database_url, redact_url
    from indexer.indexing.transfer import migrate_agent

    url = args.to
    if not is_database_url(url):
        raise InvalidParams(f"--to must be a postgresql:// URL, not {url!r}")
    settings = load_settings(
        args.config, workspace=args.workspace, agent=args.agent, openclaw=args.openclaw_config
    )
    agents = [settings.agent(args.agent)] if args.agent else list(settings.agents)
    copied = {}
    for cfg in agents:
        bar = ProgressBar(err, f"copying {cfg.agent_name}")
        try:
            report = migrate_agent(cfg, url, replace=args.replace, progress=bar)
        finally:
            bar.close()
        copied[cfg.agent_name] = report.to_json()
        if not args.json:
            r = report
            out.write(
                f"{cfg.agent_name}: {r.files} files, {r.chunks} chunks, {r.vectors} vectors, "
                f"{r.cache} cache entries, {r.cursors} transcript cursors copied\n"
            )
            if r.orphans:
                out.write(f"  {r.orphans} chunks of no indexed file were left behind\n")
    if args.json:
        _print_json({"to": redact_url(url), "agents": copied}, out)
    else:
        out.write(
            f"copied into {redact_url(url)}. Point memindex at it: [store] url in the config "
            "(or MEMINDEX_DATABASE_URL), then restart the daemon.\n"
        )
    return 0


def _serve_options(args: argparse.Namespace) -> list[str]:
    """The global options that select what ``serve`` serves, with absolute paths. The
    config file found without ``--config`` (``$XDG_CONFIG_HOME/memindex/config.toml``)
    is named too: a service's environment may not have the variable."""
    from indexer.config import default_config_path

    config = args.config
    if config is None and default_config_path().is_file():
        config = default_config_path()
    out: list[str] = []
    for flag, value in (
        ("--config", config),
        ("--workspace", args.workspace),
        ("--openclaw-config", args.openclaw_config),
    ):
        if value is not None:
            out += [flag, str(Path(value).expanduser().absolute())]
    if args.agent is not None:
        out += ["--agent", args.agent]
    return out


def _cmd_service(args: argparse.Namespace, out: TextIO) -> int:
    from indexer.surfaces import service

    kind = args.kind or service.default_kind()
    options = _serve_options(args)
    # What the unit will serve must load now: a unit that cannot start would only
    # restart in a loop.
    settings = load_settings(
        args.config, workspace=args.workspace, agent=args.agent, openclaw=args.openclaw_config
    )
    from indexer.selection import provider_state

    for agent in settings.agents:
        agent.require_workspace()
        state = provider_state(agent)
        if state["state"] == "failed":  # the README promises this refusal
            raise ConfigError(
                f"agent {agent.agent_name}: the {state['name']} provider cannot be set up "
                f'({state["reason"]}); fix: {state["fix"]}; or set provider.name = "none" '
                "for a keyword-only service"
            )
    if args.action == "print":
        out.write(service.render(kind, args=options))
        return 0
    path, start = service.install(kind, options)
    out.write(f"wrote {path}\nstart it with: {start}\n")
    return 0


def _cmd_openclaw(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from indexer.surfaces import openclaw_setup as setup

    if args.action == "uninstall":
        done = setup.uninstall(args.openclaw_config, openclaw=args.openclaw, out=out, err=err)
        if args.json:
            _print_json(done, out)
            return 0
        lines = [
            f"memindex is out of OpenClaw's memory slot ({done['config']}): memory-core is "
            "back, with its memory tools."
        ]
        if done["daemonStopped"]:
            lines.append(f"stopped the memindex daemon (pid {done['daemonStopped']}).")
        lines.append("The index files are kept; `memindex status` names them.")
        out.write("\n".join(lines) + "\n")
        return 0
    done = setup.install(
        args.openclaw_config,
        openclaw=args.openclaw,
        dreaming=not args.no_dreaming,
        service=args.service,
        plugin=args.plugin,
        out=out,
        err=err,
    )
    if args.json:
        _print_json(done, out)
        return 0
    d, c = done["daemon"], done["check"]
    dreaming = (
        "dreaming kept (memory-core runs it); memory-core's own memory tools denied "
        "(tools.deny: memory-core)"
        if done["dreaming"]
        else "dreaming off (plugins.entries.memindex.config.dreaming.enabled = false)"
    )
    found = f"{c['results']} result(s)" + (f", first {c['top']}" if c["top"] else "")
    lines = [
        f"memindex is OpenClaw's memory engine now ({done['config']}):",
        "  plugin memindex installed and selected: plugins.slots.memory = memindex",
        f"  {dreaming}",
        f"  daemon on {d['socket']} " + ("(started)" if d["started"] else "(already running)"),
        f"check: agent {c['agent']}: {c['files']} files, {c['chunks']} chunks; a search "
        f"found {found}",
        "Restart the gateway to load it (openclaw gateway restart). To go back: "
        "memindex openclaw uninstall",
    ]
    out.write("\n".join(lines) + "\n")
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from indexer.surfaces.daemon import Daemon

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
    args = parser().parse_args(argv)
    if args.command not in _DAEMON_COMMANDS:
        _setup_logging(args, err)
    try:
        if args.command == "serve":
            return _cmd_serve(args)
        if args.command == "distill":
            return _cmd_distill(args, out)
        if args.command == "service":
            return _cmd_service(args, out)
        if args.command == "openclaw":
            return _cmd_openclaw(args, out, err)
        if args.command == "migrate":
            return _cmd_migrate(args, out, err)
        try:
            cfg = load_config(
                args.config,
                workspace=args.workspace,
                agent=args.agent,
                openclaw=args.openclaw_config,
            )
        except ConfigError as exc:
            if args.command != "status":
                raise
            return _status_despite(exc, args, out, err)
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
            from indexer.surfaces import mcp_server

            cfg.require_workspace()  # fail now, not at the client's first call
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
        if index_damaged(exc):  # a page read failed after the file opened: not a bug
            err.write(f"memindex: error: {DAMAGED_HINT.format(exc)}\n")
            return 2
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
