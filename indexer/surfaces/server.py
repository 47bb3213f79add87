"""JSON-RPC 2.0 over a Unix stream socket: framing, peer check, dispatch.

One JSON object (or batch array) per line, UTF-8. The socket is created mode 0600 and
every connection's peer uid is checked (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS):
other uids get an error and are disconnected. A request line over ``max_request``
bytes, malformed JSON, an unknown method or bad params get JSON-RPC errors, and the
connection stays usable. Replies are bounded too: one over ``max_reply`` bytes is
replaced by an error saying so, and a batch (at most ``MAX_BATCH`` requests) shares one
``max_reply`` budget, so a small request cannot make the daemon build a huge answer.
Strings that are not valid Unicode (lone surrogates, which JSON can carry) are
refused as invalid params and never kill the connection. At ``max_connections``
the connection idle the longest is closed to make room (a client leaking its
connections cannot lock the others out; one whose client does not read its answer
counts as idle, and is dropped after ``write_timeout``); only when every one is
computing an answer is a new one refused as busy. Each connection has its own thread;
handlers must be thread-safe (the daemon gives each request its own read-only
SQLite connection). A request whose client closes its connection before the answer
is abandoned: the work stops at its next ``checkpoint`` (between a search's stages,
per curated entry) instead of running on for nobody.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import socket
import stat
import sys
import threading
import time
from pathlib import Path

from indexer.errors import ConfigError, abandoned_when
from indexer.surfaces.client import peer_uid
from indexer.surfaces.rpc import (
    BUSY,
    FORBIDDEN,
    TOO_LARGE,
    Handler,
    answer_line,
    encode_line,
    error_reply,
)
from indexer.surfaces.socket_file import clear_stale, listen_at, take_lock

__all__ = ["SOCKET_PATH_MAX", "SocketServer"]

# The longest path a Unix socket may be bound to (sun_path less its NUL).
SOCKET_PATH_MAX = 103 if sys.platform == "darwin" else 107

log = logging.getLogger(__name__)


class SocketServer:
    """Accepts connections on a Unix socket and answers JSON-RPC requests."""

    def __init__(
        self,
        path: Path,
        handler: Handler,
        *,
        max_request: int = 1024 * 1024,
        max_connections: int = 256,
        idle_timeout: float = 300.0,
        max_reply: int = 16 * 1024 * 1024,
        allowed_uid: int | None = None,
        write_timeout: float = 30.0,
    ) -> None:
        self.path = path
        self.handler = handler
        self.max_request = max_request
        self.max_reply = max_reply
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self.write_timeout = write_timeout  # a reply the client does not read: dropped
        self.allowed_uid = os.getuid() if allowed_uid is None else allowed_uid
        self._sock: socket.socket | None = None
        self._lock_fd: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Open connections -> when each went idle (monotonic), None while it is
        # answering a request.
        self._conns: dict[socket.socket, float | None] = {}
        self._conns_lock = threading.Lock()
        # Connections answering a request -> set when that request's client is gone
        # (the work done for it stops at its next checkpoint).
        self._asking: dict[socket.socket, threading.Event] = {}
        self.abandoned = 0  # requests whose client went away before the answer
        self._bound: tuple[int, int] = (0, 0)  # the socket file made (device, inode)
        self._path_check = 0.0  # when the socket file is next looked at
        self._shadowed = False  # something else is at the path (said once)
        self.rebound = 0  # times the socket file was made again
        self.refused = 0
        self.evicted = 0  # idle connections closed at the limit to make room

    # -- lifecycle ---------------------------------------------------------------

    def claim(self) -> None:
        """Make the socket path this server's (DaemonRunning if a live daemon, ours
        or another user's, serves it), without listening yet."""
        if self._lock_fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._take_lock()
        try:
            self._clear_stale()
        except BaseException:
            self._release_lock()
            raise

    def start(self) -> None:
        self.claim()
        try:
            self._sock = self._listen()
        except OSError as exc:
            self._release_lock()
            raise ConfigError(
                f"cannot listen on {self.path}: {exc.strerror or exc} (a socket path is at "
                "most ~107 bytes; set server.socket to a shorter one)"
            ) from exc
        self._thread = threading.Thread(
            target=self._accept_loop, name="memindex-accept", daemon=True
        )
        self._thread.start()
        log.info("listening on %s", self.path)

    def _listen(self) -> socket.socket:
        sock, self._bound = listen_at(self.path)
        return sock

    def _keep_socket_file(self) -> None:
        """The socket file removed under the daemon (a cleaned /run, a stray rm): no
        client could reach it, status said "not running" and a new daemon refused to
        start. Checked once a second; a path with nothing at it is bound again (one
        another process put something at is left alone, and said so once)."""
        now = time.monotonic()
        if now < self._path_check:
            return
        self._path_check = now + 1.0
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            st = None
        except OSError:
            return
        if st is not None:
            if (st.st_dev, st.st_ino) != self._bound and not self._shadowed:
                self._shadowed = True
                log.warning(
                    "%s is no longer this daemon's socket: something replaced it", self.path
                )
            return
        try:
            fresh = self._listen()
        except OSError as exc:
            log.warning("the socket %s was removed and cannot be made again: %s", self.path, exc)
            return
        old, self._sock = self._sock, fresh
        if old is not None:
            old.close()
        self._shadowed = False
        self.rebound += 1
        log.warning("the socket %s was removed under the daemon: listening there again", self.path)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()
            with contextlib.suppress(OSError):
                st = os.lstat(self.path)
                if stat.S_ISSOCK(st.st_mode) and (st.st_dev, st.st_ino) == self._bound:
                    os.unlink(self.path)  # ours (not one another daemon made since)
        with self._conns_lock:
            for c in list(self._conns):
                with contextlib.suppress(OSError):
                    c.shutdown(socket.SHUT_RDWR)
        self._release_lock()

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _take_lock(self) -> None:
        self._lock_fd = take_lock(self.path)

    def _clear_stale(self) -> None:
        clear_stale(self.path)

    # -- connections ---------------------------------------------------------------

    def _accept_loop(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            ready, _, _ = select.select([self._sock], [], [], 0.2)
            self._notice_gone_clients()
            self._keep_socket_file()
            if not ready or self._sock not in ready:  # bound again: the old one is closed
                continue
            try:
                conn, _ = self._sock.accept()
            except BlockingIOError:
                continue
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    log.warning("out of file descriptors; refusing a connection")
                    self._stop.wait(0.1)
                    continue
                if self._stop.is_set():
                    return
                raise
            conn.setblocking(True)
            with self._conns_lock:
                too_many = len(self._conns) >= self.max_connections and not self._evict_idle()
                if not too_many:
                    self._conns[conn] = time.monotonic()
            if too_many:
                self._send_and_close(conn, error_reply(None, BUSY, "too many connections"))
                continue
            threading.Thread(
                target=self._serve, args=(conn,), daemon=True, name="memindex-conn"
            ).start()

    def _evict_idle(self) -> bool:
        """At the connection limit: close the connection idle the longest (one with
        no request being answered) to make room, so a client that leaks its
        connections cannot lock out the others for ``idle_timeout``. Its thread sees
        the shutdown and leaves. False when every connection is busy. Called with
        ``_conns_lock`` held."""
        idle = [(since, c) for c, since in self._conns.items() if since is not None]
        if not idle:
            return False
        _, oldest = min(idle, key=lambda x: x[0])
        del self._conns[oldest]  # its thread's discard is then a no-op
        self.evicted += 1
        with contextlib.suppress(OSError):
            oldest.shutdown(socket.SHUT_RDWR)
        return True

    def _send_and_close(self, conn: socket.socket, obj: dict[str, object]) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(encode_line(obj))
        with contextlib.suppress(OSError):
            conn.close()

    def _serve(self, conn: socket.socket) -> None:
        try:
            uid = peer_uid(conn)
            if uid is not None and uid != self.allowed_uid:
                self.refused += 1
                log.warning("refused a connection from uid %d", uid)
                self._send_and_close(
                    conn, error_reply(None, FORBIDDEN, "connection refused: different user")
                )
                return
            conn.settimeout(self.idle_timeout if self.idle_timeout > 0 else None)
            self._read_loop(conn)
        except (OSError, TimeoutError):
            pass
        finally:
            with self._conns_lock:
                self._conns.pop(conn, None)
            with contextlib.suppress(OSError):
                conn.close()

    def _read_loop(self, conn: socket.socket) -> None:
        buf = bytearray()
        discarding = False  # inside an oversized line: drop bytes until its newline
        while not self._stop.is_set():
            data = conn.recv(65536)
            if not data:  # the client closed its side: a last line without "\n" is answered
                if buf.strip() and not discarding:
                    self._answer(conn, bytes(buf))
                return
            buf += data
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    if len(buf) > self.max_request:
                        if not discarding:
                            conn.sendall(self._too_large())
                        discarding = True
                        buf.clear()
                    break
                line = bytes(buf[:nl])
                del buf[: nl + 1]
                if discarding:
                    discarding = False
                    continue
                if len(line) > self.max_request:
                    conn.sendall(self._too_large())
                    continue
                self._answer(conn, line)

    def _answer(self, conn: socket.socket, line: bytes) -> None:
        self._mark(conn, busy=True)
        gone = threading.Event()
        with self._conns_lock:
            self._asking[conn] = gone
        try:
            with abandoned_when(gone):
                reply = self.handle_line(line)
            if reply is not None and not gone.is_set():
                # the answer is ready: a client that does not read it holds nothing
                # up (it may be evicted at the limit) and is dropped after a while
                self._mark(conn, busy=False)
                conn.settimeout(self.write_timeout)
                try:
                    conn.sendall(reply)
                finally:
                    conn.settimeout(self.idle_timeout if self.idle_timeout > 0 else None)
        finally:
            with self._conns_lock:
                self._asking.pop(conn, None)
            self._mark(conn, busy=False)

    def _notice_gone_clients(self) -> None:
        """Mark each request whose client closed its connection (not only its
        sending side: a client may send, shut writing and wait) as abandoned."""
        with self._conns_lock:
            asking = [(c, g) for c, g in self._asking.items() if not g.is_set()]
        for conn, gone in asking:
            if _hung_up(conn):
                gone.set()
                self.abandoned += 1

    def _mark(self, conn: socket.socket, *, busy: bool) -> None:
        with self._conns_lock:
            if conn in self._conns:
                self._conns[conn] = None if busy else time.monotonic()

    def _too_large(self) -> bytes:
        return encode_line(
            error_reply(None, TOO_LARGE, f"request larger than {self.max_request} bytes")
        )

    def handle_line(self, line: bytes) -> bytes | None:
        """One request line -> one reply line (None for notifications only)."""
        return answer_line(line, self.handler, self.max_reply)


def _hung_up(conn: socket.socket) -> bool:
    """The peer closed ``conn`` entirely (POLLHUP; a peer that only shut its writing
    side still reads the answer)."""
    try:
        p = select.poll()
        p.register(conn, select.POLLIN)
        return any(ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, ev in p.poll(0))
    except (OSError, ValueError):  # closed under us
        return True
