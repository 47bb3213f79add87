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

What was changed is recorded per openclaw.json (``records``), so that
installing twice is installing once (the first install's ``previousSlot`` and what it
added stay the record's) and ``uninstall`` restores exactly what install changed: the
previous slot owner, ``tools.deny`` and ``plugins.allow`` as they were, the daemon
install started stopped; with nothing installed it changes nothing. An install that
fails part way (the daemon exits at once, the check search fails) undoes what it had
changed and says so. A daemon already answering on the socket is used only when it
serves this config's agents and workspaces; another OpenClaw config gets its own
socket and index folder (``openclaw.config_identity``). The index files stay
(``memindex status`` names them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO, TypedDict

import indexer
from indexer.config.text_file import read_json5
from indexer.errors import MemindexError
from indexer.openclaw import config_identity, dig, openclaw_state_dir
from indexer.surfaces.openclaw import records as records
from indexer.surfaces.openclaw.daemon import (
    SearchCheck,
    SetupError,
    check_search,
    memindex_command,
    settings_of,
    start_daemon,
    stop_daemon,
)
from indexer.surfaces.openclaw.records import DaemonStart, InstallRecord

__all__ = ["install", "plugin_dir", "uninstall"]

_CALL_TIMEOUT = 300.0  # one openclaw command (a cold start of its CLI takes 10-20 s)


class InstallReport(InstallRecord):
    check: SearchCheck
    daemonNow: DaemonStart  # this run's: the daemon it started, or the one it found


# What install changed, kept in openclaw.json itself too (the plugin entry's
# ``config.install``), so that uninstall knows it when memindex's own record is gone
# (the state folder deleted, a damaged record).
MIRROR = ("previousSlot", "addedDeny", "addedAllow", "daemon")


class UninstallReport(TypedDict):
    config: str
    slot: str  # who has the memory slot now
    daemonStopped: int | None
    changed: bool  # False: memindex was not installed there; nothing was done
    # what could not be put back, to undo by hand ([] when everything is back)
    leftToUndo: list[str]


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
    if not path.exists():
        return {}
    data = read_json5(path)
    return data if isinstance(data, dict) else {}


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
    """Install and select the plugin, configure it, start the daemon, check a search;
    on a failure, undo what was changed and raise SetupError saying so."""
    cfg_path = config_path(config)
    oc = _OpenClaw(_openclaw_command(openclaw), cfg_path, err)
    before = _read_config(cfg_path)
    earlier = records.load(cfg_path)
    previous = _previous_slot(before, earlier)
    source = plugin or plugin_dir()
    undo: list[tuple[str, Callable[[], object]]] = []
    try:
        had_plugin = _plugin_installed(before)
        oc.run("plugins", "install", str(source), "--force", "--accept-capabilities")
        if not had_plugin:
            undo.append(
                ("the plugin", lambda: oc.run("plugins", "uninstall", "memindex", "--force"))
            )
        patch, inverse, added_deny, added_allow = _install_patch(
            before, earlier, dreaming, cfg_path
        )
        oc.run("config", "patch", "--stdin", stdin=json.dumps(patch))
        undo.append(("openclaw.json", lambda: oc.run("config", "patch", "--stdin",
                                                       stdin=json.dumps(inverse))))  # fmt: skip
        daemon = start_daemon(cfg_path, service, err)
        if daemon.get("started"):
            undo.append(("the daemon", lambda: stop_daemon(Path(daemon["socket"]))))
        kept = daemon if daemon.get("started") or not earlier else earlier["daemon"]
        mirror = {"previousSlot": previous, "addedDeny": added_deny, "addedAllow": added_allow}
        oc.run("config", "patch", "--stdin", stdin=json.dumps(_mirror_patch(mirror, kept)))
        check = check_search(cfg_path)
    except (MemindexError, OSError) as exc:
        undone = _undo(undo, err)
        why = exc.message if isinstance(exc, MemindexError) else str(exc)
        raise SetupError(
            f"install failed: {why}; "
            + (f"undone: {undone}" if undone else "nothing had been changed")
        ) from exc
    record = InstallRecord(
        config=str(cfg_path),
        previousSlot=previous,
        addedDeny=added_deny,
        addedAllow=added_allow,
        dreaming=dreaming,
        plugin=str(source),
        at=time.time(),
        daemon=kept,
    )
    records.save(record)
    return InstallReport(**record, check=check, daemonNow=daemon)


def _mirror_patch(mirror: Mapping[str, object], daemon: DaemonStart) -> dict[str, object]:
    """The patch that keeps what install changed in the plugin's own entry."""
    keep = {"socket": daemon.get("socket"), "started": bool(daemon.get("started"))}
    install = {**mirror, "daemon": keep}
    return {"plugins": {"entries": {"memindex": {"config": {"install": install}}}}}


def _plugin_installed(cfg: dict[str, object]) -> bool:
    return (
        dig(cfg, "plugins", "installs", "memindex") is not None
        or dig(cfg, "plugins", "entries", "memindex") is not None
    )


def _install_patch(
    before: dict[str, object], earlier: InstallRecord | None, dreaming: bool, cfg_path: Path
) -> tuple[dict[str, object], dict[str, object], bool, bool]:
    """The config patch of an install, its inverse (for a rollback), and whether
    memory-core is in tools.deny and memindex in plugins.allow because of memindex
    (an earlier install's additions stay memindex's)."""
    denied = dig(before, "tools", "deny")
    deny = list(denied) if isinstance(denied, list) else []
    ours = bool(earlier and earlier["addedDeny"])
    entry: dict[str, object] = {"command": memindex_command(), "dreaming": {"enabled": dreaming}}
    if config_identity(cfg_path) is not None:  # another OpenClaw: its own daemon's socket
        entry["socket"] = str(settings_of(cfg_path).agents[0].socket_path())
    # the plugin's hooks read the conversation (standing intents without dreaming):
    # OpenClaw lets a plugin it does not bundle do that only with this key
    plugins: dict[str, object] = {
        "slots": {"memory": "memindex"},
        "entries": {
            "memindex": {
                "enabled": True,
                "hooks": {"allowConversationAccess": True},
                "config": entry,
            }
        },
    }
    inverse_plugins: dict[str, object] = {
        "slots": {"memory": dig(before, "plugins", "slots", "memory")},
        "entries": {"memindex": dig(before, "plugins", "entries", "memindex")},
    }
    allow = dig(before, "plugins", "allow")
    added_allow = bool(earlier and earlier["addedAllow"])
    if isinstance(allow, list) and allow and "memindex" not in allow:
        plugins["allow"] = [*allow, "memindex"]
        inverse_plugins["allow"] = allow
        added_allow = True
    patch: dict[str, object] = {"plugins": plugins}
    inverse: dict[str, object] = {"plugins": inverse_plugins}
    if dreaming and "memory-core" not in deny:
        patch["tools"] = {"deny": [*deny, "memory-core"]}
        inverse["tools"] = {"deny": deny or None}
        ours = True
    elif not dreaming and ours and "memory-core" in deny:  # installed again without dreaming
        rest = [d for d in deny if d != "memory-core"]
        patch["tools"] = {"deny": rest or None}
        inverse["tools"] = {"deny": deny}
        ours = False
    return patch, inverse, ours and dreaming, added_allow


def _undo(steps: list[tuple[str, Callable[[], object]]], err: TextIO) -> str:
    done = []
    for what, step in reversed(steps):
        try:
            step()
            done.append(what)
        except Exception as exc:  # noqa: BLE001 - report it, go on undoing the rest
            err.write(f"memindex: could not undo {what}: {exc}\n")
            done.append(f"{what} (FAILED: see above)")
    return ", ".join(done)


def uninstall(
    config: Path | None, *, openclaw: str | None, out: TextIO, err: TextIO
) -> UninstallReport:
    """Undo ``install`` in one openclaw.json: the slot back to its previous owner,
    tools.deny and plugins.allow as they were, the plugin removed, the daemon install
    started stopped. Nothing installed there: nothing is changed. Without
    ``config``: the one config memindex is installed into (several: SetupError)."""
    cfg_path = _installed_config(config)
    record = records.load(cfg_path)
    current = _read_config(cfg_path)
    slot_now = dig(current, "plugins", "slots", "memory")
    if record is None and slot_now != "memindex" and not _plugin_installed(current):
        return UninstallReport(
            config=str(cfg_path),
            slot=str(slot_now or "memory-core"),
            daemonStopped=None,
            changed=False,
            leftToUndo=[],
        )
    # what install changed: memindex's record, else the copy in openclaw.json itself
    mirrored = dig(current, "plugins", "entries", "memindex", "config", "install")
    changes = _changes(record, mirrored)
    left: list[str] = []
    oc = _OpenClaw(_openclaw_command(openclaw), cfg_path, err)
    if _plugin_installed(current) or slot_now == "memindex":
        oc.run("plugins", "uninstall", "memindex", "--force")
    current = _read_config(cfg_path)
    back = changes.get("previousSlot") or "memory-core"
    patch = _uninstall_patch(current, changes, back, left)
    oc.run("config", "patch", "--stdin", stdin=json.dumps(patch))
    stopped = None
    daemon = changes.get("daemon") or {}
    sock = daemon.get("socket") if isinstance(daemon, dict) else None
    if isinstance(daemon, dict) and daemon.get("started") and sock:
        stopped = stop_daemon(Path(str(sock)))
    elif not changes and Path(str(settings_of(cfg_path).agents[0].socket_path())).exists():
        left.append(
            "a memindex daemon may still run (who started it is not known): "
            "memindex serve --stop, or leave it for memindex's own use"
        )
    records.drop(cfg_path)
    return UninstallReport(
        config=str(cfg_path), slot=back, daemonStopped=stopped, changed=True, leftToUndo=left
    )


def _previous_slot(before: dict[str, object], earlier: InstallRecord | None) -> str | None:
    """Whose the memory slot was before memindex's first install."""
    slot = dig(before, "plugins", "slots", "memory")
    previous = earlier["previousSlot"] if earlier else (slot if isinstance(slot, str) else None)
    # a slot memindex already had (installed by hand): memory-core's
    return None if previous == "memindex" else previous


def _installed_config(config: Path | None) -> Path:
    """The openclaw.json to uninstall from: ``config``, else the one memindex is
    installed into (several: SetupError)."""
    if config is not None:
        return config_path(config)
    known = records.all_records()
    if len(known) > 1:
        names = ", ".join(r["config"] for r in known)
        raise SetupError(
            f"memindex is installed into {len(known)} OpenClaw configs ({names}): say "
            "which with --openclaw-config FILE"
        )
    return Path(known[0]["config"]) if known else config_path(None)


def _uninstall_patch(
    current: dict[str, object], changes: Mapping[str, Any], back: str, left: list[str]
) -> dict[str, object]:
    """The config patch of an uninstall: the slot back, tools.deny and plugins.allow
    as install found them; what cannot be told is added to ``left``."""
    plugins: dict[str, object] = {"slots": {"memory": back}, "entries": {"memindex": None}}
    patch: dict[str, object] = {"plugins": plugins}
    deny = dig(current, "tools", "deny")
    if isinstance(deny, list) and "memory-core" in deny:
        if changes.get("addedDeny"):
            rest = [d for d in deny if d != "memory-core"]
            tools = dig(current, "tools")
            alone = isinstance(tools, dict) and set(tools) == {"deny"}
            # null: the key goes, as before install (the whole table, if deny was all)
            patch["tools"] = {"deny": rest} if rest else None if alone else {"deny": None}
        elif not changes:  # nobody knows who put it there: say so, never claim it is back
            left.append(
                "memory-core is in tools.deny (memindex's install puts it there; its record "
                "is gone): remove it to give memory-core its memory tools back, e.g. "
                "openclaw config set tools.deny '[...]'"
            )
    allow = dig(current, "plugins", "allow")
    if changes.get("addedAllow") and isinstance(allow, list) and "memindex" in allow:
        plugins["allow"] = [a for a in allow if a != "memindex"] or None
    return patch


def _changes(record: InstallRecord | None, mirrored: object) -> dict[str, Any]:
    """What install changed, from its record or from openclaw.json's copy; {} when
    neither is readable."""
    if record is not None:
        return {k: record[k] for k in MIRROR}  # type: ignore[literal-required]
    # (a null previousSlot is no key at all in openclaw.json: a merge patch drops it)
    if isinstance(mirrored, dict) and all(k in mirrored for k in MIRROR if k != "previousSlot"):
        return {k: mirrored.get(k) for k in MIRROR}
    return {}
