"""A small client of the OpenClaw gateway's WebSocket protocol (version 4), for the
gateway methods that have no HTTP route or quick CLI (``sessions.delete``,
``sessions.rewind``): the standard library only.

The handshake: an HTTP upgrade on ``/``, the gateway's ``connect.challenge`` event,
then a ``connect`` request as a loopback backend client with the gateway's token.
Requests are ``{"type": "req", "id", "method", "params"}``; the answer is the
``res`` frame of the same id (events in between are kept in ``events``)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import time
import uuid
from typing import Any

__all__ = ["GatewayWS", "connect"]


class GatewayWS:
    def __init__(self, port: int, token: str, host: str = "127.0.0.1", timeout: float = 120):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the upgrade")
            buf += chunk
        head, self.buf = buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(f"no upgrade: {head[:200]!r}")
        self.events: list[dict[str, Any]] = []
        challenge = self.recv()
        if challenge.get("event") != "connect.challenge":
            raise ConnectionError(f"unexpected first frame: {challenge}")
        self.hello = self.call(
            "connect",
            {
                "minProtocol": 4,
                "maxProtocol": 4,
                "client": {
                    "id": "gateway-client",
                    "version": "1.0.0",
                    "platform": "linux",
                    "mode": "backend",
                },
                "role": "operator",
                "scopes": ["operator.admin"],
                "auth": {"token": token},
            },  # fmt: skip
        )

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _frame(self) -> tuple[bool, int, bytes]:
        b1, b2 = self._read(2)
        op, n = b1 & 0x0F, b2 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._read(8))[0]
        mask = self._read(4) if b2 & 0x80 else None
        data = self._read(n)
        if mask:
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
        return bool(b1 & 0x80), op, data

    def recv(self) -> dict[str, Any]:
        msg = b""
        while True:
            fin, op, data = self._frame()
            if op == 9:  # ping
                self._send(data, 10)
                continue
            if op == 8:
                raise ConnectionError(f"closed by the gateway: {data[2:]!r}")
            if op in (0, 1, 2):
                msg += data
            if fin and op in (0, 1, 2):
                out: dict[str, Any] = json.loads(msg)
                return out

    def _send(self, data: bytes, op: int = 1) -> None:
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            head = bytes([0x80 | op, 0x80 | n])
        elif n < 65536:
            head = bytes([0x80 | op, 0xFE]) + struct.pack(">H", n)
        else:
            head = bytes([0x80 | op, 0xFF]) + struct.pack(">Q", n)
        self.sock.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(data)))

    def call(self, method: str, params: dict[str, Any]) -> Any:
        rid = str(uuid.uuid4())
        frame = {"type": "req", "id": rid, "method": method, "params": params}
        self._send(json.dumps(frame).encode())
        while True:
            f = self.recv()
            if f.get("type") == "res" and f.get("id") == rid:
                if not f.get("ok"):
                    raise RuntimeError(f"{method}: {f.get('error')}")
                return f.get("payload") or {}
            self.events.append(f)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send(b"\x03\xe8", 8)
        self.sock.close()


def connect(port: int, token: str, timeout: float = 120) -> GatewayWS:
    """Connect, retrying while the gateway is still starting its sidecars."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return GatewayWS(port, token)
        except (RuntimeError, OSError) as exc:
            starting = "UNAVAILABLE" in str(exc) or isinstance(exc, OSError)
            if not starting or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
