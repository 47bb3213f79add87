"""Every error memindex raises on purpose.

    MemindexError                 base; ``code`` is a stable string, ``message`` says what to do
    ├── ConfigError               the config file or an option is wrong
    ├── WorkspaceError            no workspace, or it is not a directory
    ├── PathRefused               memory_get: a path outside the indexable files
    ├── NotFound                  memory_get: an indexable path that does not exist
    ├── InvalidParams             a request's parameters have the wrong type or range
    └── StoreError                the index file cannot be opened, migrated or written
        └── IndexMismatch         the index file belongs to another workspace

The CLI turns these into one line on stderr and exit status 2; the socket server
turns them into JSON-RPC errors carrying ``code`` in ``data``. Anything else that
escapes is a bug and is reported as such.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "IndexMismatch",
    "InvalidParams",
    "MemindexError",
    "NotFound",
    "PathRefused",
    "StoreError",
    "WorkspaceError",
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


class StoreError(MemindexError):
    code = "store"


class IndexMismatch(StoreError):
    code = "index_mismatch"
