"""Talking to a running daemon over its Unix socket (used by the CLI)."""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
from pathlib import Path
from typing import Any

from .errors import MemindexError

__all__ = ["DaemonUnavailable", "RemoteError", "call", "serves"]

_ids = itertools.count(1)


class DaemonUnavailable(Exception):
    """No daemon answers on the socket."""


class RemoteError(MemindexError):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, message: str, rpc_code: int, code: str) -> None:
        super().__init__(message)
        self.rpc_code = rpc_code
        self.code = code


def call(
    path: Path, method: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0
) -> Any:
    """One JSON-RPC call; raises DaemonUnavailable or RemoteError."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(str(path))
        except OSError as exc:
            raise DaemonUnavailable(str(exc)) from exc
        req = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
        sock.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            data = sock.recv(1 << 20)
            if not data:
                raise DaemonUnavailable("the daemon closed the connection")
            buf += data
    except TimeoutError as exc:
        raise DaemonUnavailable(f"no answer within {timeout}s") from exc
    finally:
        with contextlib.suppress(OSError):
            sock.close()
    reply: Any = json.loads(buf)
    if "error" in reply:
        err = reply["error"]
        detail = err.get("data") or {}
        code = str(detail.get("code", "remote")) if isinstance(detail, dict) else "remote"
        raise RemoteError(str(err.get("message")), int(err.get("code", 0)), code)
    return reply.get("result")


def serves(path: Path, agent: str, index_path: Path) -> bool:
    """True if a daemon answers on ``path`` and serves ``agent`` from ``index_path``."""
    if not path.exists():
        return False
    try:
        pong = call(path, "ping", timeout=2.0)
    except (DaemonUnavailable, RemoteError, ValueError):
        return False
    agents = pong.get("agents") if isinstance(pong, dict) else None
    return isinstance(agents, dict) and agents.get(agent) == str(index_path)
