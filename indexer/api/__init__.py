"""The protocol: request types parsed once at the edge (``requests``), the answers'
shapes (``responses``), and the one method table every surface dispatches through
(``methods``: name, parser, parameters, handler on a ``MemoryService``).

This package imports nothing heavy: the CLI loads it to talk to the daemon.
"""

from indexer.api.methods import METHODS, MemoryService, Method, dispatch, input_schema, parse
from indexer.api.requests import (
    MAX_RESULTS,
    MODES,
    SOURCES,
    GetRequest,
    Mode,
    Param,
    PingRequest,
    QmdSearchRequest,
    ReindexRequest,
    Request,
    SearchRequest,
    StatusRequest,
    agent_of,
)
from indexer.api.responses import (
    BatchJob,
    Citation,
    DaemonInfo,
    GetResponse,
    LastSync,
    PingResponse,
    ProviderState,
    QmdResult,
    Recovered,
    ReindexResponse,
    SearchResponse,
    SearchResult,
    SkippedFile,
    StatusResponse,
    VectorState,
    WatcherState,
)

__all__ = [
    "MAX_RESULTS",
    "METHODS",
    "MODES",
    "SOURCES",
    "BatchJob",
    "Citation",
    "DaemonInfo",
    "LastSync",
    "Recovered",
    "WatcherState",
    "GetRequest",
    "GetResponse",
    "MemoryService",
    "Method",
    "Mode",
    "Param",
    "PingRequest",
    "PingResponse",
    "ProviderState",
    "QmdResult",
    "QmdSearchRequest",
    "ReindexRequest",
    "ReindexResponse",
    "Request",
    "SearchRequest",
    "SearchResponse",
    "SearchResult",
    "SkippedFile",
    "StatusRequest",
    "StatusResponse",
    "VectorState",
    "agent_of",
    "dispatch",
    "input_schema",
    "parse",
]
