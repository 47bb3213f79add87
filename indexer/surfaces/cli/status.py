"""``memindex status`` and ``memindex doctor``: what the index holds and its health,
for a person (the JSON is the socket's ``status`` answer)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TextIO

from indexer.api import StatusResponse
from indexer.config import Config
from indexer.config.file import socket_despite
from indexer.errors import ConfigError, MemindexError
from indexer.surfaces.cli.parts import Call, describe_progress
from indexer.surfaces.client import Client
from indexer.surfaces.reading import read_call

__all__ = ["run_doctor", "run_status"]


def run_status(c: Call) -> int:
    try:
        cfg = c.config()
    except ConfigError as exc:
        return _status_despite(exc, c)
    st = read_call(cfg, "status", {}, direct=c.setup_logging)
    if c.args.json:
        return c.json(st)
    return _print_status(st, c.out, cfg)


def _print_status(st: StatusResponse, out: TextIO, cfg: Config | None = None) -> int:
    if st.get("lastSync") is None and not st.get("files") and st.get("indexBytes") == 0:
        out.write(f"index:     {st['indexPath']} (not built yet: run 'memindex index')\n")
    else:
        out.write(f"index:     {st['indexPath']}\n")
    out.write(f"workspace: {st['workspace']}\n")
    for src, c in sorted(st["sources"].items()):
        out.write(f"{src + ':':<11}{c['files']} files, {c['chunks']} chunks\n")
    note = st.get("transcriptsNote")
    if note and not st["sources"].get("sessions", {}).get("files"):
        out.write(f"           transcripts: {note}\n")
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
    _print_health(st, out)
    _print_daemon(st, out, cfg)
    return 0


def _print_health(st: StatusResponse, out: TextIO) -> None:
    """Work under way, the last sync, what was skipped, errors, a recovery."""
    work = st.get("progress")
    if work:
        out.write(f"working:   {describe_progress(work)}\n")
    tails = st.get("transcriptTails")
    if tails:
        out.write(
            f"pending:   {tails} transcript(s) with new lines searchable, not yet committed "
            "(sessions.deltaBytes, deltaMessages, idleFlushMs)\n"
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


def _print_daemon(st: StatusResponse, out: TextIO, cfg: Config | None) -> None:
    """The daemon answering (its watcher, memory, reload errors), or why none."""
    d = st.get("daemon")
    if d:
        w = d["watcher"]
        out.write(
            f"daemon:    pid {d['pid']} on {d['socket']}, watcher {w['backend']}"
            + (f" ({w['reason']})" if w.get("reason") else "")
            + (
                f"; started on demand, exits after {idle / 60:g} min without a "
                "request (memindex serve --stop)"
                if (idle := d.get("idleExitS"))
                else ""
            )
            + "\n"
        )
        mem = st.get("memory")
        if mem:
            held = [f"{n:,} {what}" for n, what in ((mem["keywordRows"], "chunks"),
                    (mem["vectorRows"], "vectors")) if n is not None]  # fmt: skip
            out.write(
                f"in memory: {mem['state']}" + (f" ({', '.join(held)})" if held else "")
                + (f"; last update failed: {mem['error']}" if mem.get("error") else "") + "\n"
            )  # fmt: skip
        if d.get("reloadError"):
            out.write(f"reload:    refused, the old config is in use: {d['reloadError']}\n")
        if d.get("configError"):
            out.write(f"config:    does not load (the daemon keeps its own): {d['configError']}\n")
    elif cfg is not None:
        out.write(f"daemon:    {_other_daemon(cfg)}\n")


def _status_despite(exc: ConfigError, c: Call) -> int:
    """``status`` when the config does not load (an edit gone wrong): a daemon running
    on the socket the file names (else the default one) still serves the config it
    had; show its status, and why the file is refused (what its next reload would
    say too)."""
    args, out, err = c.args, c.out, c.err
    sock = socket_despite(args.config, args.openclaw_config)
    try:
        pong = Client(sock).ping(timeout=2.0)
        agent = args.agent or next(iter(pong.get("agents") or {}), None)
        st = Client(sock, agent).status(timeout=10.0)
    except MemindexError:
        raise exc from None
    err.write(
        f"memindex: warning: the config does not load: {exc.message}\n"
        f"  the daemon on {sock} goes on with the config it had (status below)\n"
    )
    if "daemon" in st:  # a daemon's status always has it
        st["daemon"]["configError"] = exc.message
    if args.json:
        return c.json(st)
    return _print_status(st, out)


def _other_daemon(cfg: Config) -> str:
    """What the status line says when the status was read from the index file: no
    daemon answers; the one that does serves this agent but did not give its status
    (it was starting: asked a moment later it answers); or it serves other agents
    (named, with their index)."""
    sock = cfg.socket_path()
    try:
        pong = Client(sock).ping(timeout=2.0)
    except MemindexError:
        return "not running (read the index file directly)"
    agents = pong.get("agents") or {}
    if str(agents.get(cfg.agent_name)) == str(cfg.index_location()):
        return (
            f"one answers on {sock} for agent {cfg.agent_name} but did not give its "
            "status (starting or busy; read the index file directly, ask again shortly)"
        )
    served = ", ".join(f"{a} ({where})" for a, where in agents.items())
    return (
        f"one answers on {sock} but serves {served or 'no agent'}, not agent "
        f"{cfg.agent_name} ({cfg.index_location()}); read the index file directly "
        "(--agent names the agent a daemon serves)"
    )


def run_doctor(c: Call) -> int:
    args, out = c.args, c.out
    from indexer.surfaces.cli.doctor import TODO, checks, install_checks

    try:
        got = checks(c.config())
    except MemindexError as exc:  # a config that cannot be read is the first FAIL
        got = [("config", False, exc.message), *install_checks()]
    got.append(_openclaw_check(args.openclaw_config))
    if args.json:
        c.json(
            [
                {"check": n, "ok": ok, "detail": d.removeprefix(TODO)}
                | ({"todo": True} if d.startswith(TODO) else {})
                for n, ok, d in got
            ]
        )
    else:
        for n, ok, d in got:
            mark = "todo" if d.startswith(TODO) else "ok  " if ok else "FAIL"
            d = d.removeprefix(TODO).replace("\n", "\n" + " " * 17)
            out.write(f"{mark} {n:<11} {d}\n")
    return 0 if all(ok for _, ok, _ in got) else 1


def _openclaw_check(given: Path | None) -> tuple[str, bool, str]:
    """Which of OpenClaw's memory features memindex, memory-core or nobody serves."""
    from indexer.surfaces.openclaw.features import features_report
    from indexer.surfaces.openclaw.setup import config_path

    try:
        return ("openclaw", True, features_report(config_path(given)))
    except MemindexError as exc:
        return ("openclaw", False, exc.message)
