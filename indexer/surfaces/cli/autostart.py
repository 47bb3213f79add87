"""The daemon a command-line search starts for the searches after it.

A hybrid search answered from the index file loads the embedding model first (1.9 s
with MiniLM, 4-14 s with e5-small on 2 cores); a daemon keeps it loaded (0.3 s). So a
search that had to load a model, with no daemon on this config's socket, starts one,
as ``gpg-agent`` is started by the first command that needs it: ``memindex … serve
--idle-exit 1800``, detached, logging to ``cli-daemon.log`` beside the socket. It
says so on stderr once, exits after ``IDLE_EXIT_S`` without a request, ``status``
shows it, ``memindex serve --stop`` stops it, and ``--no-daemon`` (or
``MEMINDEX_NO_DAEMON=1``) never starts one. A daemon already answering on the socket,
for this index or another, is left alone."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import TextIO

from indexer.config import Config
from indexer.errors import DaemonUnavailable
from indexer.surfaces.client import Client

__all__ = ["IDLE_EXIT_S", "autostart_wanted", "start_daemon", "stop_daemon"]

IDLE_EXIT_S = 1800.0  # an on-demand daemon's life without a request


def autostart_wanted(no_daemon: bool) -> bool:
    """Whether this command may start a daemon (not with ``--no-daemon`` or
    ``MEMINDEX_NO_DAEMON``)."""
    return not no_daemon and os.environ.get("MEMINDEX_NO_DAEMON", "") in ("", "0")


def _answering(sock: Path) -> bool:
    if not sock.exists():
        return False
    try:
        Client(sock).ping(timeout=1.0)
        return True
    except DaemonUnavailable:
        return False


def _start_lock(sock: Path) -> int:
    """A lock beside ``sock`` held by the daemon a command starts, for its life: two
    searches at once start one daemon, not two (each said it had). Its descriptor,
    or -1 when another holds it."""
    import fcntl

    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(sock.parent / f".{sock.name}.start", flags, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return -1
    return fd


def start_daemon(cfg: Config, global_args: list[str], err: TextIO) -> int | None:
    """Start ``memindex <global_args> serve --idle-exit …`` for ``cfg`` unless a daemon
    answers on its socket; its pid (None: not started)."""
    from indexer.surfaces.openclaw.daemon import memindex_command

    sock = cfg.socket_path()
    if _answering(sock):
        return None
    log_file = sock.parent / "cli-daemon.log"
    lock = -1
    try:
        sock.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = _start_lock(sock)
        if lock < 0:
            return None  # another command started one, still starting or running
        with open(log_file, "ab") as log:
            proc = subprocess.Popen(
                [*memindex_command(), *global_args, "serve", "--idle-exit", f"{IDLE_EXIT_S:g}"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                pass_fds=(lock,),  # the daemon holds the lock for its life
            )
    except OSError as exc:  # the search itself was answered: say why no daemon, go on
        err.write(f"memindex: could not start a daemon for the next searches: {exc}\n")
        return None
    finally:
        if lock >= 0:
            os.close(lock)
    err.write(
        f"memindex: started a daemon (pid {proc.pid}, log {log_file}) that keeps the model "
        f"loaded for the next searches; it exits after {IDLE_EXIT_S / 60:g} minutes "
        "without a request ('memindex serve --stop' stops it; --no-daemon starts none)\n"
    )
    return proc.pid


def stop_daemon(sock: Path, out: TextIO, wait_s: float = 30.0) -> bool:
    """Stop the daemon answering on ``sock``; whether one was there."""
    import signal

    try:
        pid = int(Client(sock).status(timeout=5.0)["daemon"]["pid"])
    except (DaemonUnavailable, KeyError, TypeError, ValueError):
        out.write(f"no daemon answers on {sock}\n")
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and _answering(sock):
        time.sleep(0.1)
    out.write(f"stopped the daemon (pid {pid}) on {sock}\n")
    return True
