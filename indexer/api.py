"""The read methods of the protocol, in one place: ``memory_search``, ``memory_get``
and ``status`` on one agent's index.

The daemon's reader threads, the CLI's and MCP's direct path (no daemon) and
``memindex-qmd`` all call ``read``, so a parameter means the same everywhere and a
bad one gets the same ``InvalidParams`` (JSON-RPC -32602) from each. The daemon adds
its own fields to ``status`` and serves ``ping`` and ``reindex`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import InvalidParams

if TYPE_CHECKING:
    from .engine import MemoryIndex

__all__ = ["READ_METHODS", "read", "search_sources"]

READ_METHODS = ("memory_search", "memory_get", "status")
_CORPUS = {"all": None, "memory": ["memory"], "sessions": ["sessions"]}


def search_sources(params: Mapping[str, Any]) -> Any:
    """``sources`` as given, else OpenClaw's ``corpus`` (``memory`` | ``sessions`` |
    ``all``); None for every source. ``MemoryIndex.search`` checks ``sources``."""
    if params.get("sources") is not None:
        return params["sources"]
    corpus = params.get("corpus")
    if corpus is None:
        return None
    if not isinstance(corpus, str) or corpus not in _CORPUS:
        raise InvalidParams("'corpus' must be one of 'memory', 'sessions', 'all'")
    return _CORPUS[corpus]


def read(idx: MemoryIndex, method: str, params: Mapping[str, Any]) -> Any:
    """Answer one read method on ``idx``."""
    if not isinstance(params, Mapping):
        raise InvalidParams("params must be an object")
    if method == "memory_search":
        return idx.search(
            params.get("query"),
            max_results=params.get("maxResults"),
            min_score=params.get("minScore"),
            gate=params.get("gate"),
            sources=search_sources(params),
        )
    if method == "memory_get":
        return idx.get(params.get("path"), start=params.get("from"), lines=params.get("lines"))
    if method == "status":
        return idx.status()
    raise ValueError(f"not a read method: {method!r}")
