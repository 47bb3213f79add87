"""The commands that set memindex up or run it: ``serve``, ``mcp``, ``service``,
``openclaw``, ``migrate`` and ``distill``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from indexer.errors import ConfigError, InvalidParams, MemindexError
from indexer.surfaces.cli.parts import Call, ProgressBar
from providers.errors import install_hint

__all__ = ["run_distill", "run_mcp", "run_migrate", "run_openclaw", "run_serve", "run_service"]


def run_serve(c: Call) -> int:
    from indexer.surfaces.daemon import Daemon

    if c.args.stop:
        from indexer.config.file import socket_despite
        from indexer.surfaces.cli.autostart import stop_daemon

        if c.args.socket is not None:
            sock = Path(c.args.socket)
        else:  # a config that does not load: the socket it names (the daemon has its own)
            try:
                sock = c.config().socket_path()
            except ConfigError:
                sock = socket_despite(c.args.config, c.args.openclaw_config)
        return 0 if stop_daemon(sock, c.out) else 1
    if c.args.idle_exit is not None and c.args.idle_exit <= 0:
        raise InvalidParams("--idle-exit must be a number of seconds above 0")
    daemon = Daemon(
        c.settings(), socket_path=c.args.socket, reload=c.settings, idle_exit_s=c.args.idle_exit
    )
    return daemon.run()


def run_mcp(c: Call) -> int:
    try:
        import anyio  # noqa: F401 - what mcp_server needs, asked before anything starts
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"memindex mcp needs the Python package {exc.name}: {install_hint('mcp')}"
        ) from None
    from indexer.surfaces import mcp_server

    cfg = c.config()
    cfg.require_workspace()  # fail now, not at the client's first call
    return mcp_server.run(cfg)


def run_distill(c: Call) -> int:
    """jsonl_distill's protocol: one JSON object on stdout, exit 1 on an error."""
    args, out = c.args, c.out
    from indexer.sources.transcripts.distill import Distiller

    settings = c.settings()
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


def run_migrate(c: Call) -> int:
    """Copy each agent's SQLite index into the database (no re-embedding)."""
    args, out, err = c.args, c.out, c.err
    from indexer.config import is_database_url, redact_url
    from indexer.engine import migrate

    url = args.to
    if not is_database_url(url):
        raise InvalidParams(f"--to must be a postgresql:// URL, not {url!r}")
    settings = c.settings()
    agents = [settings.agent(args.agent)] if args.agent else list(settings.agents)
    copied = {}
    for cfg in agents:
        bar = ProgressBar(err, f"copying {cfg.agent_name}")
        try:
            report = migrate(cfg, url, replace=args.replace, progress=bar)
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
        c.json({"to": redact_url(url), "agents": copied})
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


def run_service(c: Call) -> int:
    args, out = c.args, c.out
    from indexer.surfaces import service

    kind = args.kind or service.default_kind()
    options = _serve_options(args)
    # What the unit will serve must load now: a unit that cannot start would only
    # restart in a loop.
    settings = c.settings()
    from indexer.selection import provider_state

    for agent in settings.agents:
        agent.require_workspace()
        state = provider_state(agent)
        if state["state"] == "failed":  # docs/DAEMON.md promises this refusal
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


def run_openclaw(c: Call) -> int:
    args, out, err = c.args, c.out, c.err
    from indexer.surfaces.openclaw import setup as setup

    if args.action == "uninstall":
        gone = setup.uninstall(args.openclaw_config, openclaw=args.openclaw, out=out, err=err)
        if args.json:
            return c.json(gone)
        return _uninstalled(gone, out)
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
        return c.json(done)
    return _installed(done, out)


def _uninstalled(gone: Mapping[str, Any], out: TextIO) -> int:
    """What ``openclaw uninstall`` did, for a person."""
    if not gone["changed"]:
        out.write(
            f"memindex is not installed in {gone['config']} (its memory slot is "
            f"{gone['slot']}'s): nothing changed.\n"
        )
        return 0
    whole = not gone["leftToUndo"]
    lines = [
        f"memindex is out of OpenClaw's memory slot ({gone['config']}): {gone['slot']} "
        "has it again"
        + (", with its memory tools." if gone["slot"] == "memory-core" and whole else ".")
    ]
    if gone["daemonStopped"]:
        lines.append(f"stopped the memindex daemon (pid {gone['daemonStopped']}).")
    if not whole:
        lines.append("Not put back (memindex's install record is gone), to do by hand:")
        lines += [f"  - {item}" for item in gone["leftToUndo"]]
    lines.append("The index files are kept; `memindex status` names them.")
    out.write("\n".join(lines) + "\n")
    return 0


def _installed(done: Mapping[str, Any], out: TextIO) -> int:
    """What ``openclaw install`` did and what serves each memory feature now."""
    d, chk = done["daemonNow"], done["check"]
    dreaming = (
        "dreaming kept (memory-core runs it); memory-core's own memory tools denied "
        "(tools.deny: memory-core)"
        if done["dreaming"]
        else "dreaming off (plugins.entries.memindex.config.dreaming.enabled = false)"
    )
    found = f"{chk['results']} result(s)" + (f", first {chk['top']}" if chk["top"] else "")
    lines = [
        f"memindex is OpenClaw's memory engine now ({done['config']}):",
        "  plugin memindex installed and selected: plugins.slots.memory = memindex",
        f"  {dreaming}",
        f"  daemon on {d['socket']} " + ("(started)" if d["started"] else "(already running)"),
        f"check: agent {chk['agent']}: {chk['files']} files, {chk['chunks']} chunks; a search "
        f"found {found}",
    ]
    from indexer.surfaces.openclaw.features import served

    by: dict[str, list[str]] = {}
    for who, feature in served(done["dreaming"]):
        by.setdefault(who, []).append(feature)
    lines.append(
        f"OpenClaw's memory features: {len(by.get('memindex', []))} served by memindex, "
        f"{len(by.get('memory-core', []))} by memory-core; not served with memindex in the "
        "slot (yet):"
    )
    lines += [f"  - {feature}" for feature in by.get("nobody", [])]
    lines.append(
        "Restart the gateway to load it (openclaw gateway restart). The full table: "
        "openclaw memindex status. To go back: memindex openclaw uninstall"
    )
    out.write("\n".join(lines) + "\n")
    return 0
