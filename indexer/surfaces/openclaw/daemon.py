"""The daemon ``memindex openclaw install`` starts for an openclaw.json, the check
search it runs through it, and stopping it again (``uninstall``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO, TypedDict

from indexer.api import PingResponse
from indexer.config import Settings
from indexer.errors import DaemonUnavailable, MemindexError
from indexer.surfaces.client import Client
from indexer.surfaces.openclaw.records import DaemonStart

__all__ = ["SearchCheck", "SetupError", "check_search", "settings_of", "start_daemon",
           "stop_daemon"]  # fmt: skip


class SetupError(MemindexError):
    code = "openclaw_setup"


class SearchCheck(TypedDict):
    agent: str
    files: int
    chunks: int
    results: int
    top: str | None  # the first result's citation
    mode: str


def memindex_command() -> list[str]:
    beside = Path(sys.executable).parent / "memindex"
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-m", "indexer.surfaces.cli"]


def settings_of(cfg_path: Path) -> Settings:
    """memindex's settings for an openclaw.json (one per agent)."""
    from indexer.config.file import load_settings

    return load_settings(None, openclaw=cfg_path)


def start_daemon(cfg_path: Path, service: bool, err: TextIO) -> DaemonStart:
    """The daemon for this openclaw.json: one that answers is kept when it serves this
    config's agents and workspaces (another config's daemon is an error, never taken
    for this one's); else a user service (``service``) or a detached ``memindex
    serve`` as the plugin starts it. One that exits at once is an error with its
    output, at once."""
    settings = settings_of(cfg_path)
    sock = settings.agents[0].socket_path()
    try:
        pong = Client(sock).ping(timeout=2.0)
    except DaemonUnavailable:
        pong = None
    if pong is not None:
        _same_daemon(sock, settings, pong)
        return DaemonStart(socket=str(sock), started=False, pid=None, agents=list(pong["agents"]))
    args = ["--openclaw-config", str(cfg_path)]
    how: DaemonStart
    proc: subprocess.Popen[bytes] | None = None
    log_file = cfg_path.parent / "logs" / "memindex.log"
    if service:
        from indexer.surfaces import service as svc

        kind = svc.default_kind()
        unit, start = svc.install(kind, args)
        err.write(f"memindex: wrote {unit}; starting it: {start}\n")
        r = subprocess.run(start, shell=True, capture_output=True, text=True)  # noqa: S602
        if r.returncode != 0:
            raise SetupError(f"the service did not start ({start}): {r.stderr.strip()[-500:]}")
        how = DaemonStart(service=str(unit))
    else:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        start_at = log_file.stat().st_size if log_file.exists() else 0
        with open(log_file, "ab") as log:
            proc = subprocess.Popen(
                [*memindex_command(), *args, "serve"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        how = DaemonStart(pid=proc.pid, log=str(log_file))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            Client(sock).ping(timeout=2.0)
            return DaemonStart(socket=str(sock), started=True, **how)
        except DaemonUnavailable:
            if proc is not None and proc.poll() is not None:
                with open(log_file, "rb") as f:
                    f.seek(start_at)
                    said = f.read()[-1500:].decode("utf-8", "replace").strip()
                raise SetupError(
                    f"the memindex daemon exited at once (code {proc.returncode}): "
                    f"{said or 'no output'}"
                ) from None
            time.sleep(0.2)
    raise SetupError(f"the memindex daemon did not answer on {sock} within 60 s ({how})")


def _same_daemon(sock: Path, settings: Settings, pong: PingResponse) -> None:
    """SetupError unless the daemon on ``sock`` serves these agents' workspaces."""
    served = pong.get("agents")
    names = list(served) if isinstance(served, dict) else []
    for agent in settings.agents:
        if agent.agent_name not in names:
            raise SetupError(
                f"a memindex daemon on {sock} serves {names or 'no agent'}, not this "
                f"OpenClaw's agent {agent.agent_name}: stop it, or give this openclaw.json "
                "another socket (plugins.entries.memindex.config.socket)"
            )
        st = Client(sock, agent.agent_name).status(timeout=10.0)
        want = str(agent.require_workspace().resolve())
        if st.get("workspace") not in (None, want):
            raise SetupError(
                f"the memindex daemon on {sock} indexes {st.get('workspace')} for agent "
                f"{agent.agent_name}, not this OpenClaw's workspace {want}: it serves another "
                "openclaw.json; stop it, or give this one another socket "
                "(plugins.entries.memindex.config.socket)"
            )


def check_search(cfg_path: Path) -> SearchCheck:
    """A search through the daemon, once its first sync is done."""
    settings = settings_of(cfg_path)
    sock = settings.agents[0].socket_path()
    agent = settings.agents[0].agent_name
    deadline = time.monotonic() + 120
    while True:
        st = Client(sock, agent).status(timeout=10.0)
        if st["lastSync"] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    res = Client(sock, agent).search("memory", minScore=0, timeout=30)
    top = res["results"][0]["citation"] if res["results"] else None
    return SearchCheck(
        agent=agent,
        files=st["files"],
        chunks=st["chunks"],
        results=len(res["results"]),
        top=top,
        mode=res["mode"],
    )


def stop_daemon(sock: Path) -> int | None:
    try:
        pid = int(Client(sock).status(timeout=5.0)["daemon"]["pid"])
    except (MemindexError, KeyError, TypeError, ValueError):
        return None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and sock.exists():
        time.sleep(0.1)
    return pid
