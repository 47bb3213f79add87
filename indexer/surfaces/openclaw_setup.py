"""``memindex openclaw install | uninstall``: memindex into OpenClaw's memory slot in
one step, and back.

``install`` runs the user's own ``openclaw`` (its plugin installer and config writer,
so OpenClaw records and validates everything as if the user had typed it):

1. ``openclaw plugins install <the plugin shipped in this package>`` (copied into
   OpenClaw's extensions; enables it and selects it for the memory slot);
2. ``openclaw config patch``: the plugin's ``command`` is this memindex; dreaming
   stays as it was (on by default) with memory-core's tools denied
   (``tools.deny += ["memory-core"]``), so memory-core runs dreaming and memindex
   answers ``memory_search`` / ``memory_get``; or dreaming off (``--no-dreaming``);
   ``plugins.allow``, when the user keeps one, gets ``memindex``;
3. the daemon: started for this openclaw.json unless one answers (or a user service
   is installed and started with ``--service``); then a check search.

What was changed is written to ``<state dir>/openclaw-install.json`` so that
``uninstall`` can undo it: ``openclaw plugins uninstall memindex`` (the slot goes back
to memory-core), memory-core's tools allowed again, the daemon started here stopped.
The index files stay (``memindex status`` names them).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO, TypedDict

import indexer
from indexer.api import StatusResponse
from indexer.config import Settings, state_dir
from indexer.errors import ConfigError, DaemonUnavailable, MemindexError
from indexer.openclaw import openclaw_state_dir
from indexer.surfaces.client import call

__all__ = ["install", "plugin_dir", "uninstall"]

_RECORD = "openclaw-install.json"
_CALL_TIMEOUT = 300.0  # one openclaw command (a cold start of its CLI takes 10-20 s)


class SetupError(MemindexError):
    code = "openclaw_setup"


class DaemonStart(TypedDict, total=False):
    socket: str
    started: bool  # False: one was answering already
    pid: int | None
    agents: list[str]
    service: str  # the unit file, when started as a service
    log: str


class SearchCheck(TypedDict):
    agent: str
    files: int
    chunks: int
    results: int
    top: str | None  # the first result's citation
    mode: str


class InstallRecord(TypedDict):
    """What ``install`` changed, kept for ``uninstall``."""

    config: str
    previousSlot: str | None
    addedDeny: bool
    dreaming: bool
    plugin: str
    at: float
    daemon: DaemonStart


class InstallReport(InstallRecord):
    check: SearchCheck


class UninstallReport(TypedDict):
    config: str
    slot: str
    daemonStopped: int | None


def plugin_dir() -> Path:
    """The OpenClaw plugin shipped with this memindex: inside the installed package
    (a wheel), else the repository's ``integrations/openclaw`` (a checkout)."""
    here = Path(indexer.__file__).resolve().parent
    for candidate in (here / "openclaw_plugin", here.parent / "integrations" / "openclaw"):
        if (candidate / "openclaw.plugin.json").is_file():
            return candidate
    raise SetupError(f"the OpenClaw plugin is missing from this memindex install ({here})")


def config_path(given: Path | None) -> Path:
    """openclaw.json: ``--openclaw-config``, else where OpenClaw looks."""
    if given is not None:
        return given.expanduser().resolve()
    env = os.environ.get("OPENCLAW_CONFIG_PATH", "").strip()
    if env:
        return Path(env).expanduser()
    return openclaw_state_dir() / "openclaw.json"


def _openclaw_command(given: str | None) -> list[str]:
    words = (given or os.environ.get("MEMINDEX_OPENCLAW") or "openclaw").split()
    if shutil.which(words[0]) is None and not Path(words[0]).is_file():
        raise SetupError(
            f"OpenClaw is not installed: `{words[0]}` was not found on PATH (install it with "
            "npm install -g openclaw, or pass --openclaw '<command>')"
        )
    return words


class _OpenClaw:
    def __init__(self, words: list[str], config: Path, err: TextIO) -> None:
        self.words = words
        self.env = dict(os.environ)
        self.env["OPENCLAW_CONFIG_PATH"] = str(config)
        self.err = err

    def run(self, *args: str, stdin: str | None = None) -> str:
        self.err.write(f"memindex: running openclaw {' '.join(args[:3])} ...\n")
        try:
            r = subprocess.run(
                [*self.words, *args],
                input=stdin,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=_CALL_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            raise SetupError(
                f"openclaw {' '.join(args)} did not finish in {_CALL_TIMEOUT:.0f} s"
            ) from exc
        if r.returncode != 0:
            tail = (r.stderr.strip() or r.stdout.strip())[-1500:]
            raise SetupError(f"openclaw {' '.join(args[:3])} failed (exit {r.returncode}): {tail}")
        return r.stdout


def _read_config(path: Path) -> dict[str, object]:
    import json5

    try:
        data = json5.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def _get(d: object, *keys: str) -> object:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _memindex_command() -> list[str]:
    beside = Path(sys.executable).parent / "memindex"
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-m", "indexer.surfaces.cli"]


def _record_path() -> Path:
    return state_dir() / _RECORD


def install(
    config: Path | None,
    *,
    openclaw: str | None,
    dreaming: bool,
    service: bool,
    plugin: Path | None,
    out: TextIO,
    err: TextIO,
) -> InstallReport:
    """Install and select the plugin, configure it, start the daemon, check a search."""
    cfg_path = config_path(config)
    oc = _OpenClaw(_openclaw_command(openclaw), cfg_path, err)
    before = _read_config(cfg_path)
    source = plugin or plugin_dir()
    oc.run("plugins", "install", str(source), "--force", "--accept-capabilities")
    denied = _get(before, "tools", "deny")
    deny = list(denied) if isinstance(denied, list) else []
    added_deny = dreaming and "memory-core" not in deny
    entry = {"command": _memindex_command(), "dreaming": {"enabled": dreaming}}
    plugins: dict[str, object] = {
        "slots": {"memory": "memindex"},
        "entries": {"memindex": {"enabled": True, "config": entry}},
    }
    allow = _get(before, "plugins", "allow")
    if isinstance(allow, list) and allow and "memindex" not in allow:
        plugins["allow"] = [*allow, "memindex"]
    patch: dict[str, object] = {"plugins": plugins}
    if added_deny:
        patch["tools"] = {"deny": [*deny, "memory-core"]}
    oc.run("config", "patch", "--stdin", stdin=json.dumps(patch))
    slot = _get(before, "plugins", "slots", "memory")
    daemon = _start_daemon(cfg_path, service, err)
    record = InstallRecord(
        config=str(cfg_path),
        previousSlot=slot if isinstance(slot, str) else None,
        addedDeny=added_deny,
        dreaming=dreaming,
        plugin=str(source),
        at=time.time(),
        daemon=daemon,
    )
    check = _check_search(cfg_path)
    path = _record_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(json.dumps(record, indent=2), encoding="utf-8")
    return InstallReport(**record, check=check)


def _settings(cfg_path: Path) -> Settings:
    from indexer.config_file import load_settings

    return load_settings(None, openclaw=cfg_path)


def _start_daemon(cfg_path: Path, service: bool, err: TextIO) -> DaemonStart:
    """The daemon for this openclaw.json: one that answers is kept; else a user
    service (``service``) or a detached ``memindex serve`` as the plugin starts it."""
    settings = _settings(cfg_path)
    sock = settings.agents[0].socket_path()
    try:
        pong = call(sock, "ping", timeout=2.0)
        return DaemonStart(socket=str(sock), started=False, pid=None, agents=list(pong["agents"]))
    except DaemonUnavailable:
        pass
    args = ["--openclaw-config", str(cfg_path)]
    how: DaemonStart
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
        logs = cfg_path.parent / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / "memindex.log", "ab") as log:
            proc = subprocess.Popen(
                [*_memindex_command(), *args, "serve"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        how = DaemonStart(pid=proc.pid, log=str(logs / "memindex.log"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            call(sock, "ping", timeout=2.0)
            return DaemonStart(socket=str(sock), started=True, **how)
        except DaemonUnavailable:
            time.sleep(0.2)
    raise SetupError(f"the memindex daemon did not answer on {sock} within 60 s ({how})")


def _check_search(cfg_path: Path) -> SearchCheck:
    """A search through the daemon, once its first sync is done."""
    settings = _settings(cfg_path)
    sock = settings.agents[0].socket_path()
    agent = settings.agents[0].agent_name
    deadline = time.monotonic() + 120
    while True:
        st: StatusResponse = call(sock, "status", {"agent": agent}, timeout=10.0)
        if st["lastSync"] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    res = call(
        sock, "memory_search", {"query": "memory", "minScore": 0, "agent": agent}, timeout=30
    )
    top = res["results"][0]["citation"] if res["results"] else None
    return SearchCheck(
        agent=agent,
        files=st["files"],
        chunks=st["chunks"],
        results=len(res["results"]),
        top=top,
        mode=res["mode"],
    )


def uninstall(
    config: Path | None, *, openclaw: str | None, out: TextIO, err: TextIO
) -> UninstallReport:
    """Undo ``install``: memory-core back in the slot (and its tools), the plugin
    removed, the daemon started by install stopped."""
    record_file = _record_path()
    try:
        record = json.loads(record_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    cfg_path = (
        Path(record["config"]) if config is None and record.get("config") else config_path(config)
    )
    oc = _OpenClaw(_openclaw_command(openclaw), cfg_path, err)
    oc.run("plugins", "uninstall", "memindex", "--force")
    current = _read_config(cfg_path)
    patch: dict[str, object] = {"plugins": {"slots": {"memory": "memory-core"}}}
    deny = _get(current, "tools", "deny")
    if record.get("addedDeny") and isinstance(deny, list) and "memory-core" in deny:
        rest = [d for d in deny if d != "memory-core"]
        patch["tools"] = {"deny": rest or None}  # null: the key goes, as before install
    oc.run("config", "patch", "--stdin", stdin=json.dumps(patch))
    stopped = None
    daemon = record.get("daemon") or {}
    if daemon.get("started") and daemon.get("socket"):
        stopped = _stop_daemon(Path(daemon["socket"]))
    record_file.unlink(missing_ok=True)
    return UninstallReport(config=str(cfg_path), slot="memory-core", daemonStopped=stopped)


def _stop_daemon(sock: Path) -> int | None:
    try:
        pid = int(call(sock, "status", timeout=5.0)["daemon"]["pid"])
    except (MemindexError, KeyError, TypeError, ValueError):
        return None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and sock.exists():
        time.sleep(0.1)
    return pid
