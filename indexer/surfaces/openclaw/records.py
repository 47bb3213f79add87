"""What ``memindex openclaw install`` changed, one record per OpenClaw config (by its
resolved path), so that ``uninstall`` restores exactly that config and installing
twice is installing once.

Records live in ``<state dir>/openclaw-installs/<hash>.json``; the single
``openclaw-install.json`` of earlier versions is read as the record of the config it
names. Files are written whole (a temporary file renamed over) and opened without
following a symlink."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TypedDict

from indexer.config import state_dir

__all__ = ["DaemonStart", "InstallRecord", "all_records", "drop", "load", "save"]

_DIR = "openclaw-installs"
_LEGACY = "openclaw-install.json"


class DaemonStart(TypedDict, total=False):
    socket: str
    started: bool  # False: one was answering already
    pid: int | None
    agents: list[str]
    service: str  # the unit file, when started as a service
    log: str


class InstallRecord(TypedDict):
    """What ``install`` changed in one openclaw.json, kept for ``uninstall``."""

    config: str
    previousSlot: str | None  # who had the memory slot before the first install
    addedDeny: bool  # memory-core put in tools.deny by install
    addedAllow: bool  # memindex put in plugins.allow by install
    dreaming: bool
    plugin: str
    at: float
    daemon: DaemonStart


def _key(config: Path) -> str:
    return hashlib.sha256(str(config.expanduser().resolve()).encode()).hexdigest()[:16]


def _file(config: Path) -> Path:
    return state_dir() / _DIR / f"{_key(config)}.json"


def _read(path: Path) -> InstallRecord | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            data = json.loads(f.read(1 << 20))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("config"), str):
        return None
    data.setdefault("addedAllow", False)
    data.setdefault("previousSlot", None)
    data.setdefault("addedDeny", False)
    data.setdefault("daemon", {})
    return data  # type: ignore[return-value]


def _legacy() -> InstallRecord | None:
    return _read(state_dir() / _LEGACY)


def load(config: Path) -> InstallRecord | None:
    """The record of this openclaw.json, if memindex was installed into it."""
    got = _read(_file(config))
    if got is not None:
        return got
    old = _legacy()
    if old is not None and Path(old["config"]).expanduser().resolve() == config.resolve():
        return old
    return None


def all_records() -> list[InstallRecord]:
    """Every config memindex is installed into (as recorded)."""
    out: list[InstallRecord] = []
    folder = state_dir() / _DIR
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    for name in names:
        if name.endswith(".json"):
            got = _read(folder / name)
            if got is not None:
                out.append(got)
    old = _legacy()
    if old is not None and all(r["config"] != old["config"] for r in out):
        out.append(old)
    return out


def save(record: InstallRecord) -> None:
    path = _file(Path(record["config"]))
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
    os.replace(tmp, path)
    legacy = _legacy()
    if legacy is not None and legacy["config"] == record["config"]:
        (state_dir() / _LEGACY).unlink(missing_ok=True)


def drop(config: Path) -> None:
    _file(config).unlink(missing_ok=True)
    legacy = _legacy()
    if legacy is not None and Path(legacy["config"]).expanduser().resolve() == config.resolve():
        (state_dir() / _LEGACY).unlink(missing_ok=True)
