"""The protocol's requests: one type per method, parsed and checked once at the edge
(``parse``), with the ``Param`` lists MCP's tool schemas are made from. A bad
parameter is an ``InvalidParams`` (JSON-RPC -32602) wherever it arrives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Literal

from indexer.api.params import (
    SOURCES,
    as_of_value,
    bool_value,
    camel,
    int_value,
    projects_value,
    sources_value,
    stages_value,
    zone_value,
)
from indexer.errors import InvalidParams

__all__ = [
    "AGENT",
    "MAX_RESULTS",
    "MODES",
    "GetRequest",
    "Mode",
    "Param",
    "PingRequest",
    "QmdSearchRequest",
    "ReindexRequest",
    "Request",
    "SOURCES",
    "SearchRequest",
    "StatusRequest",
    "agent_of",
]

Mode = Literal["keyword", "vector", "hybrid"]
MODES: tuple[Mode, ...] = ("keyword", "vector", "hybrid")
MAX_RESULTS = 200
MAX_QUERY_CHARS = 10_000


@dataclass(frozen=True)
class Param:
    """One request parameter as it appears on the wire and in MCP's tool schema."""

    name: str
    schema: Mapping[str, Any]
    description: str = ""
    required: bool = False


AGENT = Param("agent", {"type": "string"}, "agent id (default: the first configured agent)")


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
    active_projects: tuple[str, ...] = ()
    as_of: datetime | None = None  # when the question is asked (None: now)
    time_zone: str | None = None  # IANA name (None: query.timeZone, else the host's)
    stages: tuple[tuple[str, bool], ...] = ()  # ranking stages switched for this search

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "query",
            {"type": "string", "minLength": 1},
            "words, quoted phrases, IDs or paths",
            required=True,
        ),
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
            "which source (OpenClaw's name for sources; sources wins when both are given)",
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
        Param(
            "activeProjectKeys",
            {"type": "array", "items": {"type": "string"}, "maxItems": 16},
            "repositories active in the session: their memory entries rank higher",
        ),
        Param(
            "asOf",
            {"type": "string", "maxLength": 64},
            "when the question is asked (ISO 8601; default now): what 'yesterday' means",
        ),
        Param(
            "timeZone",
            {"type": "string", "maxLength": 64},
            "the user's time zone, e.g. Europe/Lisbon (default: query.timeZone, else the host's)",
        ),
        Param(
            "stages",
            {"type": "object", "additionalProperties": {"type": "boolean"}},
            'ranking stages switched on or off for this search, e.g. {"decision": false} '
            "(their names: query.stages in the config)",
        ),
        AGENT,
    )

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> SearchRequest:
        params = camel(params)
        query = params.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidParams("'query' must be a non-empty string")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidParams(f"'query' is longer than {MAX_QUERY_CHARS} characters")
        limit = int_value(params, "maxResults", 1)
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
            sources=sources_value(params),
            gate=bool_value(params, "gate"),
            mode=mode,
            explain=bool_value(params, "explain"),
            abstain=bool_value(params, "abstain"),
            active_projects=projects_value(params),
            as_of=as_of_value(params),
            time_zone=zone_value(params),
            stages=stages_value(params),
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
        Param(
            "path",
            {"type": "string"},
            "a path from memory_search, e.g. memory/2026-11-21.md",
            required=True,
        ),
        Param("from", {"type": "integer", "minimum": 1}, "first line, 1-based"),
        Param("lines", {"type": "integer", "minimum": 1}, "how many lines (default: all)"),
        Param("raw", {"type": "boolean"}, "a transcript's JSON events instead of its messages"),
        AGENT,
    )

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> GetRequest:
        params = camel(params)
        path = params.get("path")
        if not isinstance(path, str):
            raise InvalidParams("'path' must be a string")
        return cls(
            path=path,
            start=int_value(params, "from", 1) or 1,
            lines=int_value(params, "lines", 1),
            raw=bool_value(params, "raw"),
        )


@dataclass(frozen=True, slots=True)
class CuratedRequest:
    """memory_curated: the entries of MEMORY.md and USER.md that carry recall
    annotations, for OpenClaw's deterministic recall lane: ``triggers`` (entries
    with trigger phrases; a repository-tagged one only while all its repositories
    are active) or ``projects`` (entries of the active repositories)."""

    kind: str
    active_projects: tuple[str, ...] = ()
    limit: int | None = None

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("kind", {"enum": ["triggers", "projects"]}, "which entries", required=True),
        Param(
            "activeProjectKeys",
            {"type": "array", "items": {"type": "string"}, "maxItems": 16},
            "repositories active in the session",
        ),
        Param("limit", {"type": "integer", "minimum": 1, "maximum": 512}),
        AGENT,
    )

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> CuratedRequest:
        params = camel(params)
        kind = params.get("kind")
        if kind not in ("triggers", "projects"):
            raise InvalidParams("'kind' must be 'triggers' or 'projects'")
        limit = int_value(params, "limit", 1)
        return cls(kind, projects_value(params), None if limit is None else min(limit, 512))


@dataclass(frozen=True, slots=True)
class StatusRequest:
    """``status``: no parameters but the agent."""

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
        return cls(force=bool_value(params, "force"))


@dataclass(frozen=True, slots=True)
class PingRequest:
    """``ping``: no parameters."""

    PARAMS: ClassVar[tuple[Param, ...]] = ()

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> PingRequest:
        return cls()


@dataclass(frozen=True, slots=True)
class QmdSearchRequest:
    """qmd_search (the ``memindex-qmd`` daemon's): a QMD command line's search."""

    query: str
    mode: str = "query"  # search | vsearch | query
    n: int = 5
    collections: tuple[str, ...] = ()

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("query", {"type": "string"}, required=True),
        Param("mode", {"enum": ["search", "vsearch", "query"]}),
        Param("n", {"type": "integer", "minimum": 1}),
        Param("collections", {"type": "array", "items": {"type": "string"}}),
    )

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> QmdSearchRequest:
        query = params.get("query")
        if not isinstance(query, str):
            raise InvalidParams("'query' must be a string")
        mode = params.get("mode", "query")
        if mode not in ("search", "vsearch", "query"):
            raise InvalidParams("'mode' must be search, vsearch or query")
        names = params.get("collections") or []
        if not isinstance(names, list) or not all(isinstance(c, str) for c in names):
            raise InvalidParams("'collections' must be a list of names")
        return cls(query, str(mode), int_value(params, "n", 1) or 5, tuple(names))


AUDIT_KINDS = ("bootstrap", "stale", "duplicates", "conflicts", "unfindable", "secrets")


@dataclass(frozen=True, slots=True)
class AuditRequest:
    """memory_audit: what is wrong with the memory itself (``kinds``: the finding
    kinds to look for; empty: all). It reads, never writes."""

    kinds: tuple[str, ...] = ()

    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "kinds",
            {"type": "array", "items": {"enum": list(AUDIT_KINDS)}, "maxItems": len(AUDIT_KINDS)},
            "the finding kinds to look for (default: all)",
        ),
        AGENT,
    )

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> AuditRequest:
        kinds = params.get("kinds") or []
        if not isinstance(kinds, list) or not all(k in AUDIT_KINDS for k in kinds):
            raise InvalidParams(f"'kinds' must be a list of: {', '.join(AUDIT_KINDS)}")
        return cls(tuple(dict.fromkeys(kinds)))


Request = (
    SearchRequest
    | GetRequest
    | CuratedRequest
    | StatusRequest
    | ReindexRequest
    | PingRequest
    | QmdSearchRequest
    | AuditRequest
)


def agent_of(params: Mapping[str, Any]) -> str | None:
    """The request's ``agent`` (its envelope: every method takes it), else None."""
    name = params.get("agent")
    if name is not None and not isinstance(name, str):
        raise InvalidParams("'agent' must be a string")
    return name
