"""The one table of methods: each method's name, request parser, parameters (MCP's
tool schema), description, and handler: the ``MemoryService`` operation that answers
it. A read method's handler asks the service for a ``Reader`` of the agent's index
(``MemoryService.read``) and calls the reader's method of the same name, so the
services need nothing per read method. Every surface goes through ``dispatch``: the
socket server (the daemon's service), the CLI's and MCP's direct path (a service
reading the index file), ``memindex-qmd`` and, over the socket, the OpenClaw plugin.

A new read method is an entry here, its method on ``Reader`` (and on
``search.searcher.Searcher``, which implements it), and its request and response
types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from indexer.api.requests import (
    AGENT,
    AuditRequest,
    CuratedRequest,
    GetRequest,
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
    AuditResponse,
    CuratedResponse,
    GetResponse,
    PingResponse,
    QmdResult,
    ReindexResponse,
    SearchResponse,
    StatusResponse,
)
from indexer.errors import InvalidParams, UnknownMethod

__all__ = ["METHODS", "MemoryService", "Method", "Reader", "dispatch", "input_schema", "parse"]


class Reader(Protocol):
    """What reads one agent's index for a request (``search.searcher.Searcher``)."""

    def search(self, req: SearchRequest) -> SearchResponse: ...
    def get(self, req: GetRequest) -> GetResponse: ...
    def curated(self, req: CuratedRequest) -> CuratedResponse: ...
    def audit(self, req: AuditRequest) -> AuditResponse: ...


_T = TypeVar("_T")


class MemoryService(Protocol):
    """What answers the methods, for one agent (``agent``: the request's envelope;
    None is the service's default agent). ``read``: ``answer`` run with a reader of
    the agent's index (``embed``: the reader can embed a query)."""

    def read(self, agent: str | None, answer: Callable[[Reader], _T], *, embed: bool) -> _T: ...
    def status(self, agent: str | None, req: StatusRequest) -> StatusResponse: ...
    def reindex(self, agent: str | None, req: ReindexRequest) -> ReindexResponse: ...
    def ping(self, agent: str | None, req: PingRequest) -> PingResponse: ...
    def qmd_search(self, agent: str | None, req: QmdSearchRequest) -> list[QmdResult]: ...


_Req = TypeVar("_Req", bound=Request)
Handler = Callable[[MemoryService, str | None, Any], Any]


@dataclass(frozen=True)
class Method:
    """``read``: answered from the index (the direct path can answer it without a
    daemon); the others need the daemon. ``listed``: offered to MCP clients."""

    name: str
    request: Callable[[Mapping[str, Any]], Request]
    params: tuple[Param, ...]
    description: str
    handler: Handler
    read: bool
    listed: bool = True


def _method(
    name: str,
    cls: type[_Req],
    description: str,
    handler: Callable[[MemoryService, str | None, _Req], Any],
    *,
    read: bool,
    listed: bool = True,
) -> Method:
    params = cls.PARAMS if AGENT in cls.PARAMS or not listed else (*cls.PARAMS, AGENT)
    return Method(name, cls.parse, params, description, handler, read, listed)


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        _method(
            "memory_search",
            SearchRequest,
            "Search the agent's memory (Markdown notes and session transcripts). "
            "Words are OR-ed and ranked; quote phrases; IDs and paths match as written. "
            "Each result has path, startLine, endLine, score, snippet, source, citation.",
            lambda svc, agent, req: svc.read(
                agent, lambda r: r.search(req), embed=req.mode != "keyword"
            ),
            read=True,
        ),
        _method(
            "memory_get",
            GetRequest,
            "Read lines of a memory file or transcript, e.g. from a search result's "
            "citation: path plus from (1-based first line) and lines.",
            lambda svc, agent, req: svc.read(agent, lambda r: r.get(req), embed=False),
            read=True,
        ),
        _method(
            "memory_curated",
            CuratedRequest,
            "The entries of MEMORY.md and USER.md with recall annotations (trigger "
            "phrases, importance, repositories), for a deterministic recall lane.",
            lambda svc, agent, req: svc.read(agent, lambda r: r.curated(req), embed=False),
            read=True,
            listed=False,  # OpenClaw's lane 1 (the plugin), not an agent's tool
        ),
        _method(
            "memory_audit",
            AuditRequest,
            "What is wrong with the memory itself: MEMORY.md/USER.md past OpenClaw's "
            "bootstrap caps, curated entries a later note changed, duplicates and "
            "conflicts, entries no question finds, secrets in memory files. Reads only.",
            lambda svc, agent, req: svc.read(agent, lambda r: r.audit(req), embed=True),
            read=True,
        ),
        _method(
            "status",
            StatusRequest,
            "What the index holds: files and chunks per source, provider, vector state, "
            "last sync, skipped files.",
            lambda svc, agent, req: svc.status(agent, req),
            read=True,
        ),
        _method(
            "reindex",
            ReindexRequest,
            "Sync the index now; answers when done.",
            lambda svc, agent, req: svc.reindex(agent, req),
            read=False,
        ),
        _method(
            "ping",
            PingRequest,
            "Is the daemon alive; which agents it serves.",
            lambda svc, agent, req: svc.ping(agent, req),
            read=False,
        ),
        _method(
            "qmd_search",
            QmdSearchRequest,
            "memindex-qmd's search, answered by its own daemon in QMD's shape.",
            lambda svc, agent, req: svc.qmd_search(agent, req),
            read=False,
            listed=False,
        ),
    )
}


def parse(method: str, params: Any) -> tuple[str | None, Request]:
    """(the envelope's agent, the request) for ``method`` from raw params; an
    unknown method is ``UnknownMethod``, a bad parameter ``InvalidParams``."""
    m = METHODS.get(method)
    if m is None:
        raise UnknownMethod(method, [n for n, x in METHODS.items() if x.listed])
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise InvalidParams("params must be an object")
    return agent_of(params), m.request(params)


def dispatch(service: MemoryService, method: str, params: Any) -> Any:
    """Parse ``params`` for ``method`` and answer it with ``service``."""
    agent, req = parse(method, params)
    return METHODS[method].handler(service, agent, req)


def input_schema(method: str) -> dict[str, object]:
    """The JSON Schema of a method's params (MCP's ``inputSchema``)."""
    props: dict[str, object] = {}
    for p in METHODS[method].params:
        props[p.name] = {**p.schema, **({"description": p.description} if p.description else {})}
    required = [p.name for p in METHODS[method].params if p.required]
    return {"type": "object", "properties": props, **({"required": required} if required else {})}
