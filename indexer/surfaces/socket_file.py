"""The socket file a daemon serves at: one daemon per path (a lock beside it), a
stale file left by a crashed daemon cleared, a live one (ours or another user's)
never stolen, and the file bound mode 0600."""

from __future__ import annotations

import logging
import os
import socket
import stat
from pathlib import Path

from indexer.errors import DaemonRunning
from indexer.surfaces.client import peer_uid

__all__ = ["clear_stale", "listen_at", "take_lock"]

log = logging.getLogger(__name__)


def listen_at(path: Path) -> tuple[socket.socket, tuple[int, int]]:
    """A listening socket bound at ``path`` (mode 0600) and the file's (device, inode)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        sock.bind(str(path))
        os.chmod(path, 0o600)
        st = os.lstat(path)
    except OSError:
        sock.close()
        raise
    finally:
        os.umask(old_umask)
    sock.listen(128)
    sock.setblocking(False)
    return sock, (st.st_dev, st.st_ino)


def take_lock(path: Path) -> int:
    """One daemon per socket path: an exclusive lock on ``<socket>.lock`` (its fd)."""
    import fcntl

    lock_path = str(path) + ".lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise DaemonRunning(f"a memindex daemon is already serving {path}") from exc
    return fd


def clear_stale(path: Path) -> None:
    """Remove a socket file left by a crashed daemon; never steal a live one."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise DaemonRunning(
            f"{path} exists and is not a socket; remove it or pick another server.socket"
        )
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            log.info("removing stale socket %s", path)
            os.unlink(path)
            return
        except OSError as exc:
            raise DaemonRunning(f"cannot check socket {path}: {exc}") from exc
        try:
            uid = peer_uid(probe)
        except OSError:
            uid = None
    if uid is not None and uid != os.getuid():
        raise DaemonRunning(
            f"{path} is served by a process of uid {uid}, not yours ({os.getuid()}): "
            "that is not your memindex; pick another server.socket (or --socket)"
        )
    raise DaemonRunning(f"a memindex daemon is already serving {path}")
