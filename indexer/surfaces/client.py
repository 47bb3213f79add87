"""Talking to a running daemon over its Unix socket (the CLI, MCP, memindex-qmd).

Before a query is sent, the server's uid is read from the socket (SO_PEERCRED on
Linux, LOCAL_PEERCRED on macOS): a socket in a shared directory that another user
has taken over gets nothing (``ForeignSocket``)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import struct
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from indexer.errors import ConfigError, DaemonSilent, DaemonUnavailable, ForeignSocket, RemoteError

if TYPE_CHECKING:  # a client answered by the daemon loads no more than it needs
    from indexer.api import (
        AuditResponse,
        CuratedResponse,
        GetResponse,
        PingResponse,
        QmdResult,
        ReindexResponse,
        SearchResponse,
        StatusResponse,
    )

__all__ = [
    "Client",
    "DaemonSilent",
    "DaemonUnavailable",
    "ForeignSocket",
    "RemoteError",
    "call",
    "peer_pid",
    "peer_uid",
    "serves",
]

_ids = itertools.count(1)
MAX_REPLY_BYTES = 256 * 1024 * 1024  # a reply longer than this is not read to its end


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket, if the OS says."""
    if hasattr(socket, "SO_PEERCRED"):
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return int(uid)
    if sys.platform == "darwin":  # LOCAL_PEERCRED -> struct xucred {u_int version; uid_t uid; …}
        sol_local, local_peercred = 0, 0x001
        raw = conn.getsockopt(sol_local, local_peercred, struct.calcsize("IIh16I"))
        return int(struct.unpack_from("II", raw)[1])
    return None


def peer_pid(conn: socket.socket) -> int | None:
    """The pid of the process at the other end of a Unix socket, if the OS says."""
    try:
        if hasattr(socket, "SO_PEERCRED"):
            raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            return int(struct.unpack("3i", raw)[0]) or None
        if sys.platform == "darwin":  # LOCAL_PEERPID
            return int(struct.unpack("i", conn.getsockopt(0, 0x002, struct.calcsize("i")))[0])
    except OSError:
        pass
    return None


def connect(path: Path, timeout: float) -> socket.socket:
    """A connected socket whose server runs as this user, or DaemonUnavailable /
    ForeignSocket."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        uid = peer_uid(sock)
    except OSError as exc:
        sock.close()
        raise DaemonUnavailable(f"no memindex daemon answers on {path}: {exc}") from exc
    if uid is not None and uid != os.getuid():
        sock.close()
        raise ForeignSocket(
            f"{path} is served by a process of uid {uid}, not yours ({os.getuid()}): nothing "
            "was sent. Remove that socket or set server.socket to a private directory"
        )
    return sock


def call(
    path: Path, method: str, params: Mapping[str, object] | None = None, *, timeout: float = 30.0
) -> Any:
    """One JSON-RPC call; raises DaemonUnavailable, ForeignSocket or RemoteError."""
    sock = connect(path, timeout)
    try:
        req = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
        sock.sendall(json.dumps(req).encode() + b"\n")
        buf = bytearray()
        while not buf.endswith(b"\n"):
            data = sock.recv(1 << 20)
            if not data:
                raise DaemonUnavailable(f"the daemon on {path} closed the connection")
            buf += data
            if len(buf) > MAX_REPLY_BYTES:
                raise DaemonUnavailable(f"the reply on {path} is over {MAX_REPLY_BYTES} bytes")
    except TimeoutError as exc:
        raise DaemonSilent(
            f"the daemon on {path} did not answer within {timeout:g}s", peer_pid(sock)
        ) from exc
    except OSError as exc:
        raise DaemonUnavailable(f"the connection to {path} failed: {exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            sock.close()
    try:
        reply: Any = json.loads(buf)
    except ValueError as exc:
        raise DaemonUnavailable(f"the daemon on {path} sent a reply that is not JSON") from exc
    if not isinstance(reply, dict):
        raise DaemonUnavailable(f"the daemon on {path} sent a reply that is not an object")
    if "error" in reply:
        err = reply["error"] if isinstance(reply["error"], dict) else {}
        detail = err.get("data") or {}
        code = str(detail.get("code", "remote")) if isinstance(detail, dict) else "remote"
        rpc_code = err.get("code", 0)
        raise RemoteError(
            str(err.get("message")), rpc_code if isinstance(rpc_code, int) else 0, code
        )
    return reply.get("result")


class Client:
    """A daemon's socket with one typed method per entry of ``api.METHODS`` a client
    sends (the daemon checks the parameters; the answers are its response types).
    ``agent``: the agent every call names (None: the daemon's first)."""

    def __init__(self, path: Path, agent: str | None = None, *, timeout: float = 30.0) -> None:
        self.path = path
        self.agent = agent
        self.timeout = timeout

    def _call(self, method: str, params: Mapping[str, object], timeout: float | None) -> Any:
        if self.agent is not None:
            params = {"agent": self.agent, **params}
        return call(self.path, method, params, timeout=self.timeout if timeout is None else timeout)

    def ping(self, *, timeout: float | None = None) -> PingResponse:
        return cast("PingResponse", call(self.path, "ping", timeout=timeout or self.timeout))

    def status(self, *, timeout: float | None = None) -> StatusResponse:
        return cast("StatusResponse", self._call("status", {}, timeout))

    def search(
        self, query: str, *, timeout: float | None = None, **params: object
    ) -> SearchResponse:
        """``params``: the request's other fields as the protocol names them
        (``maxResults``, ``minScore``, …)."""
        return cast(
            "SearchResponse", self._call("memory_search", {"query": query, **params}, timeout)
        )

    def get(self, path: str, *, timeout: float | None = None, **params: object) -> GetResponse:
        return cast("GetResponse", self._call("memory_get", {"path": path, **params}, timeout))

    def curated(
        self, kind: str, *, timeout: float | None = None, **params: object
    ) -> CuratedResponse:
        """``kind``: ``triggers`` or ``projects``; ``params``: ``activeProjectKeys``,
        ``limit``."""
        found = self._call("memory_curated", {"kind": kind, **params}, timeout)
        return cast("CuratedResponse", found)

    def audit(self, *kinds: str, timeout: float | None = 120.0) -> AuditResponse:
        """The memory audit (``kinds``: the finding kinds; none: all)."""
        params = {"kinds": list(kinds)} if kinds else {}
        return cast("AuditResponse", self._call("memory_audit", params, timeout))

    def reindex(self, *, force: bool = False, timeout: float | None = None) -> ReindexResponse:
        return cast("ReindexResponse", self._call("reindex", {"force": force}, timeout))

    def qmd_search(
        self, params: Mapping[str, object], *, timeout: float | None = None
    ) -> list[QmdResult]:
        return cast("list[QmdResult]", self._call("qmd_search", params, timeout))


def serves(path: Path, agent: str, location: str, workspace: Path | None = None) -> bool:
    """True if a daemon answers on ``path`` and serves ``agent`` from ``location``
    (``Config.index_location``: the index file, or the database and agent).
    A socket served by another user raises ForeignSocket: that is not ignored. A
    daemon serving that index for another ``workspace`` than the one asked for is
    a ConfigError naming both: the caller's flag cannot be honoured there."""
    if not path.exists():
        return False
    try:
        pong = Client(path).ping(timeout=2.0)
    except (DaemonUnavailable, RemoteError):
        return False
    agents = pong.get("agents") if isinstance(pong, dict) else None
    if not (isinstance(agents, dict) and agents.get(agent) == location):
        return False
    served = (pong.get("workspaces") or {}).get(agent)
    if workspace is not None and served and served != str(workspace.resolve()):
        raise ConfigError(
            f"the memindex daemon on {path} serves agent {agent} for workspace {served}, "
            f"not {workspace}: stop it, or name another agent (--agent) for this workspace"
        )
    return True
