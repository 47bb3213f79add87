"""The protocol's methods as types: one request type per method, parsed and checked
once at the edge, and the response shapes.

``METHODS`` is the one table of methods. The daemon serves it over the socket, the
CLI's and MCP's direct path (no daemon) answer its read methods with a ``Searcher``,
``memindex-qmd`` builds ``SearchRequest``s, and MCP's tool schemas are made from the
same ``Param`` lists (``input_schema``), so a parameter means the same everywhere
and a bad one gets the same ``InvalidParams`` (JSON-RPC -32602) from each.

This module imports nothing heavy: the CLI loads it to talk to the daemon.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NotRequired, TypedDict, TypeVar

from indexer.errors import InvalidParams

__all__ = [
    "GetRequest",
    "GetResponse",
    "MAX_RESULTS",
    "METHODS",
    "MODES",
    "Method",
    "Mode",
    "Param",
    "PingRequest",
    "ReindexRequest",
    "Request",
    "SOURCES",
    "SearchRequest",
    "SearchResponse",
    "SearchResult",
    "StatusRequest",
    "StatusResponse",
    "VectorState",
    "input_schema",
    "parse",
]

SOURCES = ("memory", "sessions")
Mode = Literal["keyword", "vector", "hybrid"]
MODES: tuple[Mode, ...] = ("keyword", "vector", "hybrid")
MAX_RESULTS = 200
MAX_QUERY_CHARS = 10_000
_CORPUS = {"all": None, "memory": ("memory",), "sessions": ("sessions",)}


@dataclass(frozen=True)
class Param:
    """One request parameter as it appears on the wire and in MCP's tool schema."""

    name: str
    schema: Mapping[str, Any]
    description: str = ""
    required: bool = False


AGENT = Param("agent", {"type": "string"}, "agent id (default: the first configured agent)")


# -- checks of raw JSON values ----------------------------------------------------------


def _int(params: Mapping[str, Any], name: str, minimum: int) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParams(f"'{name}' must be an integer")
    if value < minimum:
        raise InvalidParams(f"'{name}' must be >= {minimum}")
    return value


def _bool(params: Mapping[str, Any], name: str) -> bool:
    value = params.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidParams(f"'{name}' must be true or false")
    return value


def _sources(params: Mapping[str, Any]) -> tuple[str, ...] | None:
    """``sources`` as given, else OpenClaw's ``corpus`` (``memory`` | ``sessions`` |
    ``all``); None for every source."""
    sources = params.get("sources")
    if sources is None:
        corpus = params.get("corpus")
        if corpus is None:
            return None
        if not isinstance(corpus, str) or corpus not in _CORPUS:
            raise InvalidParams("'corpus' must be one of 'memory', 'sessions', 'all'")
        return _CORPUS[corpus]
    if sources == "all":
        return None
    if isinstance(sources, str):
        sources = [sources]
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise InvalidParams("'sources' must be a list of 'memory' / 'sessions'")
    bad = [s for s in sources if s not in SOURCES]
    if bad:
        raise InvalidParams(f"unknown source(s) {bad}: use 'memory' or 'sessions'")
    return tuple(dict.fromkeys(sources)) or None


# OpenClaw's tools take snake_case arguments since 2026.10; the wire's names are camelCase
_SNAKE = {"max_results": "maxResults", "min_score": "minScore", "start_line": "from"}


def _camel(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """``params`` with snake_case names as their camelCase ones (the camelCase wins)."""
    if not any(k in params for k in _SNAKE):
        return params
    out = dict(params)
    for snake, camel in _SNAKE.items():
        if snake in out:
            value = out.pop(snake)
            out.setdefault(camel, value)
    return out


# -- requests ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """memory_search. None means "as configured" (``query.maxResults``,
    ``query.minScore``) or, for ``sources``, every source; ``mode`` None is the best
    the index can do (hybrid when it has vectors for the provider, else keyword)."""

    query: str
    max_results: int | None = None
    min_score: float | None = None
    sources: tuple[str, ...] | None = None
    gate: bool = False
    mode: Mode | None = None
    explain: bool = False
    abstain: bool = False

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("query", {"type": "string", "minLength": 1}, "what to look for", required=True),
        Param("maxResults", {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS}),
        Param("minScore", {"type": "number", "minimum": 0, "maximum": 1}),
        Param(
            "sources",
            {"type": "array", "items": {"enum": list(SOURCES)}},
            "which sources to search (default: all)",
        ),
        Param(
            "corpus",
            {"enum": ["memory", "sessions", "all"]},
            "OpenClaw's name for sources; sources wins when both are given",
        ),
        Param("gate", {"type": "boolean"}, "skip small talk, slash commands and emoji-only input"),
        Param(
            "mode",
            {"enum": list(MODES)},
            "keyword, vector or hybrid (default: hybrid when vectors are built)",
        ),
        Param("explain", {"type": "boolean"}, "give each result's score parts"),
        Param(
            "abstain",
            {"type": "boolean"},
            "return no results, with a reason, when nothing is likely to be relevant",
        ),
        AGENT,
    )

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> SearchRequest:
        params = _camel(params)
        query = params.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidParams("'query' must be a non-empty string")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidParams(f"'query' is longer than {MAX_QUERY_CHARS} characters")
        limit = _int(params, "maxResults", 1)
        floor = params.get("minScore")
        if floor is not None:
            if isinstance(floor, bool) or not isinstance(floor, (int, float)):
                raise InvalidParams("'minScore' must be a number")
            floor = float(floor)
            if not 0.0 <= floor <= 1.0:
                raise InvalidParams("'minScore' must be between 0 and 1")
        mode = params.get("mode")
        if mode is not None and mode not in MODES:
            raise InvalidParams("'mode' must be one of 'keyword', 'vector', 'hybrid'")
        return cls(
            query=query,
            max_results=None if limit is None else min(limit, MAX_RESULTS),
            min_score=floor,
            sources=_sources(params),
            gate=_bool(params, "gate"),
            mode=mode,
            explain=_bool(params, "explain"),
            abstain=_bool(params, "abstain"),
        )


@dataclass(frozen=True, slots=True)
class GetRequest:
    """memory_get: ``lines`` lines from line ``start`` (1-based; all when None). A
    transcript's lines come rendered (``User: …``; a line that is no message is
    empty, so line numbers stay the transcript's), or its JSON events with ``raw``;
    secrets redacted either way."""

    path: str
    start: int = 1
    lines: int | None = None
    raw: bool = False

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("path", {"type": "string"}, "e.g. memory/2026-11-21.md", required=True),
        Param("from", {"type": "integer", "minimum": 1}, "first line, 1-based"),
        Param("lines", {"type": "integer", "minimum": 1}, "how many lines (default: all)"),
        Param("raw", {"type": "boolean"}, "a transcript's JSON events instead of its messages"),
        AGENT,
    )

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> GetRequest:
        params = _camel(params)
        path = params.get("path")
        if not isinstance(path, str):
            raise InvalidParams("'path' must be a string")
        return cls(
            path=path,
            start=_int(params, "from", 1) or 1,
            lines=_int(params, "lines", 1),
            raw=_bool(params, "raw"),
        )


@dataclass(frozen=True, slots=True)
class StatusRequest:
    PARAMS: ClassVar[tuple[Param, ...]] = (AGENT,)

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> StatusRequest:
        return cls()


@dataclass(frozen=True, slots=True)
class ReindexRequest:
    """reindex: sync now (``force``: rebuild from scratch); answered when done."""

    force: bool = False

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("force", {"type": "boolean"}, "rebuild every chunk"),
        AGENT,
    )

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> ReindexRequest:
        return cls(force=_bool(params, "force"))


@dataclass(frozen=True, slots=True)
class PingRequest:
    PARAMS: ClassVar[tuple[Param, ...]] = ()

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> PingRequest:
        return cls()


Request = SearchRequest | GetRequest | StatusRequest | ReindexRequest | PingRequest
_R = TypeVar("_R", SearchRequest, GetRequest, StatusRequest, ReindexRequest, PingRequest)


# -- responses --------------------------------------------------------------------------


class Citation(TypedDict):
    path: str
    startLine: int
    endLine: int
    source: str
    citation: str


class SearchResult(TypedDict):
    path: str  # workspace-relative, or sessions/<file>.jsonl
    startLine: int
    endLine: int
    score: float  # the hit's own relevance, 0..1: what minScore judges
    snippet: str
    source: str  # memory | sessions
    citation: str  # path#Lstart-Lend
    snippetStartLine: int
    snippetEndLine: int
    heading: str | None
    textScore: float
    vectorScore: NotRequired[float]  # hybrid and vector modes
    fusedScore: NotRequired[float]  # the rank key when two lists were fused
    also: NotRequired[list[Citation]]  # the same memory in the other source
    explain: NotRequired[dict[str, Any]]  # explain: true: the score's parts


class SearchResponse(TypedDict):
    results: list[SearchResult]
    provider: str | None
    model: str | None
    mode: str  # keyword | vector | hybrid | skipped
    fallback: str | None  # why this is not the mode asked for (or hybrid), else null
    skipped: NotRequired[str]  # gate: why the query was not searched
    abstained: NotRequired[str]  # abstain: why no result is returned
    relevance: NotRequired[float]  # abstain / explain: the query's relevance signal, 0..1
    explain: NotRequired[dict[str, Any]]  # explain: true: the settings that ranked it


class VectorState(TypedDict):
    enabled: bool  # searches use vectors now
    available: bool  # sqlite-vec loaded
    reason: str | None  # why not enabled
    indexedModel: str | None
    pendingChunks: int | None
    cacheEntries: int


class StatusResponse(TypedDict):
    version: str
    indexPath: str
    workspace: str | None
    sources: dict[str, dict[str, int]]  # {memory|sessions: {files, chunks}}
    files: int
    chunks: int
    provider: str | None
    model: str | None
    dims: int | None
    # the configured provider: {name, model, state: ready|configured|failed|none, reason, fix}
    providerState: dict[str, Any]
    mode: str  # what a search with no mode does: hybrid | keyword
    vector: VectorState
    sqlite: NotRequired[dict[str, Any]]  # on SQLite: versions of SQLite and sqlite-vec
    postgresql: NotRequired[dict[str, Any]]  # on PostgreSQL: server, pgvector, HNSW in use
    fingerprint: dict[str, Any] | None
    lastSync: dict[str, Any] | None
    dirty: bool
    pendingBatches: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    sessionsDir: str | None
    malformedLines: int
    indexBytes: int
    checkedAt: float
    # a damaged index file was set aside and this index started anew: {at, reason, keptAs}
    recovered: NotRequired[dict[str, Any]]
    # the index holds another workspace than the one configured (searches refuse it)
    mismatch: NotRequired[str]
    # added by the daemon
    agent: NotRequired[str]
    agents: NotRequired[list[str]]
    daemon: NotRequired[dict[str, Any]]
    lastError: NotRequired[str | None]
    errors: NotRequired[dict[str, str | None]]
    busy: NotRequired[dict[str, Any] | None]
    stuck: NotRequired[bool]


GetResponse = TypedDict(
    "GetResponse",
    {
        "path": str,
        "text": str,
        "from": int,
        "lines": int,
        "totalLines": int,
        "truncated": bool,
        "nextFrom": NotRequired[int],
    },
)


# -- the table --------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """``read``: answered from the index by a ``Searcher`` (daemon reader threads, the
    CLI's and MCP's direct path); the others are the daemon's own."""

    name: str
    request: Callable[[Mapping[str, Any]], Request]
    params: tuple[Param, ...]
    description: str
    read: bool


def _method(name: str, cls: type[_R], description: str, *, read: bool) -> Method:
    return Method(name, cls.parse, cls.PARAMS, description, read)


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        _method(
            "memory_search",
            SearchRequest,
            "Search the agent's memory (Markdown notes and session transcripts). "
            "Words are OR-ed and ranked; quote phrases; IDs and paths match as written. "
            "Each result has path, startLine, endLine, score, snippet, source, citation.",
            read=True,
        ),
        _method(
            "memory_get",
            GetRequest,
            "Read lines of a memory file or transcript, e.g. from a search result's "
            "citation: path plus from (1-based first line) and lines.",
            read=True,
        ),
        _method(
            "status",
            StatusRequest,
            "What the index holds: files and chunks per source, provider, vector state, "
            "last sync, skipped files.",
            read=True,
        ),
        _method("reindex", ReindexRequest, "Sync the index now; answers when done.", read=False),
        _method("ping", PingRequest, "Is the daemon alive; which agents it serves.", read=False),
    )
}


def parse(method: str, params: Any) -> Request:
    """The request for ``method`` (which must be in ``METHODS``) from raw params."""
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise InvalidParams("params must be an object")
    return METHODS[method].request(params)


def input_schema(method: str) -> dict[str, Any]:
    """The JSON Schema of a method's params (MCP's ``inputSchema``)."""
    props: dict[str, Any] = {}
    for p in METHODS[method].params:
        props[p.name] = {**p.schema, **({"description": p.description} if p.description else {})}
    required = [p.name for p in METHODS[method].params if p.required]
    return {"type": "object", "properties": props, **({"required": required} if required else {})}
