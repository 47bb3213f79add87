"""Every error memindex raises on purpose.

    MemindexError                 base; ``code`` is a stable string, ``message`` says what to do
    ├── ConfigError               the config file or an option is wrong
    ├── WorkspaceError            no workspace, or it is not a directory
    ├── PathRefused               memory_get: a path outside the indexable files
    │   └── FileUnreadable        a file that is not indexable text (``reason`` says why:
    │                             a symlink, FIFO or device, binary, not UTF-8, too large)
    ├── NotFound                  memory_get: an indexable path that does not exist
    │   └── FileVanished          a file that disappeared between listing and reading
    ├── InvalidParams             a request's parameters have the wrong type or range
    ├── UnknownMethod             a request names a method the table does not have
    ├── DaemonRunning             another daemon already serves the socket
    ├── DaemonUnavailable         no daemon answers on the socket (or it went away)
    │   └── DaemonSilent          one took the connection and did not answer in time
    ├── ForeignSocket             the socket is served by another user: nothing is sent
    ├── RemoteError               the daemon answered with a JSON-RPC error
    ├── Abandoned                 the client that asked went away: the work stops
    ├── TranscriptDbError         OpenClaw's agent database cannot be read (schema, I/O)
    ├── TranscriptsUnavailable    the sessions folder cannot be listed, or is gone
    └── StoreError                the index file cannot be opened, migrated or written
        ├── IndexMismatch         the index file belongs to another workspace
        ├── IndexBusy             another process holds the agent's writer lock
        ├── RowRejected           a value the database cannot store: one file is skipped
        └── IndexCorrupt          the index file is damaged (a writer sets it aside)

The CLI turns these into one line on stderr and exit status 2; the socket server
turns them into JSON-RPC errors carrying ``code`` in ``data``. Anything else that
escapes is a bug and is reported as such.
"""

from __future__ import annotations

import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "DAMAGED_HINT",
    "Abandoned",
    "ConfigError",
    "DaemonRunning",
    "DaemonSilent",
    "DaemonUnavailable",
    "FileUnreadable",
    "FileVanished",
    "ForeignSocket",
    "IndexCorrupt",
    "RemoteError",
    "IndexMismatch",
    "IndexBusy",
    "InvalidParams",
    "MemindexError",
    "NotFound",
    "PathRefused",
    "RowRejected",
    "StoreError",
    "TranscriptDbError",
    "TranscriptsUnavailable",
    "UnknownMethod",
    "WorkspaceError",
    "abandoned_when",
    "checkpoint",
    "file_kind",
    "index_damaged",
]


class MemindexError(Exception):
    """Base class; ``code`` is stable and machine-readable."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(MemindexError):
    code = "config"


class WorkspaceError(MemindexError):
    code = "workspace"


class PathRefused(MemindexError):
    code = "path_refused"


class NotFound(MemindexError):
    code = "not_found"


class InvalidParams(MemindexError):
    code = "invalid_params"


class UnknownMethod(MemindexError):
    """A method ``api.METHODS`` does not have (or this service does not answer)."""

    code = "unknown_method"

    def __init__(self, method: str, methods: list[str], why: str = "") -> None:
        super().__init__(why or f"unknown method '{method}'")
        self.method = method
        self.methods = methods


class StoreError(MemindexError):
    code = "store"


class RowRejected(StoreError):
    """The database refused a statement for the values in it (a value it cannot
    store or index), not for its own trouble. Writing one file's or transcript's
    rows, that file is skipped (or left to try again) with the reason and the others
    are indexed; anywhere else it is a StoreError like any other."""


class IndexMismatch(StoreError):
    code = "index_mismatch"


class IndexBusy(StoreError):
    """Another process writes this agent's index (``store.writer_lock``)."""

    code = "index_busy"


class IndexCorrupt(StoreError):
    """The index file is not a readable SQLite database (garbage, cut short, a
    damaged schema). It holds only what memindex derived from the user's files, so
    a writer sets it aside and builds a new one (``SqliteBackend.open``)."""

    code = "index_corrupt"


class TranscriptsUnavailable(MemindexError):
    """The sessions folder cannot be listed (permissions, I/O), is not a folder, or
    is gone while transcripts from it are indexed: the sync of the folder stops and
    what it indexed stays (a folder listing nothing is not a folder emptied)."""

    code = "transcripts_unavailable"


class TranscriptDbError(MemindexError):
    """OpenClaw's agent database (its transcripts) cannot be read: a schema this
    memindex does not know, a damaged file, a cold archive that does not verify."""

    code = "transcript_db"


class FileUnreadable(PathRefused):
    """The file exists but is not indexable text; ``reason`` says why."""

    code = "unreadable"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FileVanished(NotFound):
    """The file disappeared between discovery and reading."""


class DaemonUnavailable(MemindexError):
    code = "daemon_unavailable"


class DaemonSilent(DaemonUnavailable):
    """A daemon took the connection and did not answer within the timeout; ``pid``:
    its process, when the OS says (a stuck warm daemon can then be stopped)."""

    def __init__(self, message: str, pid: int | None = None) -> None:
        super().__init__(message)
        self.pid = pid


class DaemonRunning(MemindexError):
    """Another daemon already serves the socket."""

    code = "daemon_running"


class ForeignSocket(MemindexError):
    """The process serving the socket runs as another user (a squatter)."""

    code = "foreign_socket"


class RemoteError(MemindexError):
    """The daemon answered with a JSON-RPC error; ``code`` is its ``data.code``."""

    def __init__(self, message: str, rpc_code: int, code: str) -> None:
        super().__init__(message)
        self.rpc_code = rpc_code
        self.code = code


def index_damaged(exc: BaseException) -> bool:
    """``exc`` says the SQLite index file itself is damaged: ``IndexCorrupt``, or
    apsw's ``CorruptError``/``NotADBError`` from a page read after opening (named
    here without importing apsw)."""
    if isinstance(exc, IndexCorrupt):
        return True
    kind = type(exc)
    return kind.__module__ == "apsw" and kind.__name__ in ("CorruptError", "NotADBError")


DAMAGED_HINT = "the index file is damaged ({}): 'memindex index --force' builds a new one"


class Abandoned(MemindexError):
    """The client that asked is gone: what was being computed for it stops at the
    next ``checkpoint`` (nobody reads the answer)."""

    code = "abandoned"


_GONE: ContextVar[threading.Event | None] = ContextVar("memindex_client_gone", default=None)


@contextmanager
def abandoned_when(gone: threading.Event) -> Iterator[None]:
    """Within the block, ``checkpoint()`` raises ``Abandoned`` once ``gone`` is set
    (the socket server sets it when the request's client closes its connection)."""
    token = _GONE.set(gone)
    try:
        yield
    finally:
        _GONE.reset(token)


def checkpoint() -> None:
    """Raise ``Abandoned`` when the request being answered has lost its client; long
    loops call this between steps (a search between stages, memory_curated per entry)."""
    gone = _GONE.get()
    if gone is not None and gone.is_set():
        raise Abandoned("the client went away before the answer")


def file_kind(mode: int) -> str:
    """What a path that is not a regular file is, for a message ("a FIFO")."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symlink (not followed)"
    return "not a regular file"
