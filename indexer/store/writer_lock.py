"""One writer per agent index: the lock a writing process holds for as long as it
writes, whatever generation it writes into.

Two processes writing one agent's index (two daemons given the same ``agentId`` for
different workspaces, say) would each rebuild it for their own workspace in turn,
and each would answer from the other's rows. So a writer takes the agent's lock
before it opens the index for writing, keeps it while it runs, and a second writer
is refused with who holds it.

``FileLock`` (SQLite): ``flock`` on ``.<agent>.writer.lock`` beside the index path;
the kernel drops it when the process dies. The file says who holds it. It is never
reached through a symlink (``O_NOFOLLOW``), must be a regular file of this user, and
its folder must be this user's and not writable by others (unless sticky, as /tmp):
a lock planted by another user could make a root ``memindex`` truncate a file of
its choosing.
``PgLock`` (PostgreSQL): a session advisory lock on a connection of its own, so it
lives as long as the writer, not as long as one generation's connection. A restart
of the server ends that session and frees the lock: ``lost()`` notices within one
check (no round trip while the connection is quiet) and ``retake()`` takes it back.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import select
import socket
import stat
import time
from pathlib import Path
from typing import Any, Protocol

from indexer.errors import IndexBusy, StoreError

__all__ = ["FileLock", "PgLock", "WriterLock", "check_private_dir", "holder_label"]


def holder_label(note: str = "") -> str:
    """Who a lock holder is, for the refusal another process shows."""
    who = f"pid {os.getpid()} on {socket.gethostname()}"
    return f"{who}, {note}" if note else who


class WriterLock(Protocol):
    def lost(self) -> bool:
        """The lock is no longer held (its file replaced, its connection gone)."""
        ...

    def retake(self) -> None:
        """Take the lock again after ``lost()``; raises IndexBusy if another writer
        took it meanwhile, StoreError if it cannot be reached."""
        ...

    def release(self) -> None: ...


class FileLock:
    """The writer lock of a SQLite index: ``flock`` on a file beside it."""

    def __init__(self, index_path: Path, label: str) -> None:
        self.path = index_path.with_name(f".{index_path.name.removesuffix('.sqlite')}.writer.lock")
        self.label = label
        self.where = str(index_path)
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None
        self.retake()

    def retake(self) -> None:
        self.release()
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            check_private_dir(self.path.parent)
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StoreError(
                    f"{self.path} is a symlink: the writer lock is never followed through "
                    "one; remove it (and check who put it there)"
                ) from exc
            raise StoreError(
                f"cannot write beside the index {self.where} ({exc.strerror or exc}: "
                f"{self.path}): it can be searched, not updated, from here"
            ) from exc
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            os.close(fd)
            raise StoreError(
                f"{self.path} is not a regular file of this user (uid {st.st_uid}): not "
                "used as the writer lock; remove it"
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            raise IndexBusy(
                f"index {self.where} is being written by another memindex ({holder}): one "
                "process writes each agent's index; stop that one, or give this one another "
                "agentId (or indexPath)"
            ) from exc
        note = json.dumps({"holder": self.label, "since": time.time()})
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, note.encode(), 0)
        st = os.fstat(fd)
        self._fd, self._ident = fd, (st.st_dev, st.st_ino)

    def lost(self) -> bool:
        if self._fd is None:
            return True
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return True  # the state folder was cleared: another writer could lock anew
        except OSError:
            return False
        return (st.st_dev, st.st_ino) != self._ident

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor releases the flock

    def __del__(self) -> None:  # a writer dropped without close() must not keep it
        self.release()


def check_private_dir(folder: Path) -> None:
    """Refuse a folder another user owns, or that others may write to (unless it is
    sticky, as /tmp, where they cannot replace this user's files): as ssh refuses
    ~/.ssh. StoreError with the fix."""
    st = os.stat(folder)
    me = os.geteuid()
    if st.st_uid != me:
        raise StoreError(
            f"{folder} belongs to uid {st.st_uid}, not to this user (uid {me}): memindex "
            "keeps its index and lock only in a folder of its own user; use one "
            "(stateDir / indexPath), or `chown` this one"
        )
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise StoreError(
            f"{folder} can be written by other users (mode {stat.S_IMODE(st.st_mode):o}): "
            f"memindex refuses to keep its index there; `chmod go-w {folder}`"
        )


def _read_holder(fd: int) -> str:
    try:
        raw = os.pread(fd, 4096, 0)
        return str(json.loads(raw)["holder"])
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that did not say who it is"


class PgLock:
    """The writer lock of an agent in a PostgreSQL database: a session advisory lock
    on a connection of its own (outside the pool), which also names the holder in
    ``agents.writer``."""

    def __init__(self, url: str, agent: str, key: str, label: str, where: str) -> None:
        self.url, self.agent, self.key, self.label, self.where = url, agent, key, label, where
        self._conn: Any = None
        self.retake()

    def retake(self) -> None:
        import psycopg

        from indexer.config import redact_url

        self.release()
        try:
            conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=5, application_name="memindex writer"
            )
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL at {redact_url(self.url)}: {exc}") from exc
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (self.key,)).fetchone()
            if not (row and row[0]):
                got = conn.execute(
                    "SELECT writer FROM agents WHERE agent=%s", (self.agent,)
                ).fetchone()
                holder = got[0] if got and got[0] else "a process that did not say who it is"
                raise IndexBusy(
                    f"agent {self.agent} in {self.where} already has a writer ({holder}): one "
                    "daemon writes each agent; stop that one, or give this one another agentId"
                )
            conn.execute("UPDATE agents SET writer=%s WHERE agent=%s", (self.label, self.agent))
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(f"PostgreSQL at {redact_url(self.url)}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def token(self) -> Any:
        """The session the lock is held on now (None: not held)."""
        conn = self._conn
        return None if conn is None or conn.closed or conn.broken else conn

    def quiet(self, token: Any) -> bool:
        """Still held on session ``token`` and nothing arrived on it, without a round
        trip (a reader thread's check: it never runs a query on the lock's
        connection)."""
        conn = self._conn
        if conn is None or conn is not token or conn.closed or conn.broken:
            return False
        try:
            return not _readable(conn.fileno())
        except Exception:  # closed meanwhile by the writer thread (psycopg says so)
            return False

    def lost(self) -> bool:
        """Cheap while the connection is quiet: the server says nothing on a live
        idle session, so a readable socket means it closed it (a restart, a
        terminated backend); only then is a query run to be sure."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return True
        try:
            if not _readable(conn.fileno()):
                return False
        except (OSError, ValueError):
            return True
        try:
            conn.execute("SELECT 1")
        except Exception:
            return True
        return bool(conn.closed or conn.broken)

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                _unlock_now(conn)
            with contextlib.suppress(Exception):
                conn.close()  # the session ends: the server releases its advisory locks


def _unlock_now(conn: Any) -> None:
    """Ask the server to drop the connection's advisory locks and wait for its answer
    (2 s at most: a server that does not answer must not hold up a shutdown). The
    server ends a closed session a moment after the close, so without this a writer
    opened right after this one closed could still find the lock taken."""
    pg = conn.pgconn
    pg.send_query(b"SELECT pg_advisory_unlock_all()")
    pg.flush()
    p = select.poll()
    p.register(pg.socket, select.POLLIN | select.POLLPRI)
    p.poll(2000)


def _readable(fd: int) -> bool:
    """Whether ``fd`` has input (or was closed by the other end) now. ``poll``, not
    ``select``: a daemon of many agents has descriptors past select's 1024."""
    p = select.poll()
    p.register(fd, select.POLLIN | select.POLLPRI)
    return bool(p.poll(0))
