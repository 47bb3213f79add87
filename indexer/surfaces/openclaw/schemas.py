"""The OpenClaw plugin's tool parameters, made from the protocol's one table: the
``memory_search`` and ``memory_get`` parameters an agent's tool call may carry
(memory-core's names), each with the schema and description the socket checks it
by (``api.requests``' ``PARAMS``), plus the snake_case spelling OpenClaw's tool
readers also accept. ``scripts/gen_config.py`` writes them to the plugin's
``src/schemas.json``, which ``src/tools.js`` reads; a test keeps the two equal."""

from __future__ import annotations

import json
import re
from typing import Any

from indexer.api.requests import GetRequest, Param, SearchRequest

__all__ = ["render", "tool_schemas"]

# (tool, request type, the request's parameters the tool takes)
TOOLS: tuple[tuple[str, type[SearchRequest] | type[GetRequest], tuple[str, ...]], ...] = (
    ("memory_search", SearchRequest, ("query", "maxResults", "minScore")),
    ("memory_get", GetRequest, ("path", "from", "lines")),
)
# What a tool takes that the socket does not: the corpus, as memory-core's tools take
# it (the wiki is OpenClaw's memory corpus supplements, asked by the plugin itself).
PLUGIN_ONLY: dict[str, tuple[Param, ...]] = {
    "memory_search": (
        Param(
            "corpus",
            {"enum": ["memory", "wiki", "all", "sessions"]},
            "memory: memory files only; sessions: transcripts only; wiki: the wiki's pages; "
            "all: these and the wiki (default: memory files and transcripts as configured)",
        ),
    ),
    "memory_get": (
        Param("corpus", {"enum": ["memory", "wiki", "all"]}, "wiki: a page of the wiki"),
    ),
}


def _snake(name: str) -> str:
    return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), name)


def _property(p: Param) -> dict[str, Any]:
    schema = dict(p.schema)
    if "enum" in schema and "type" not in schema:
        schema = {"type": "string", **schema}
    return schema | ({"description": p.description} if p.description else {})


def tool_schemas() -> dict[str, dict[str, Any]]:
    """Each tool's JSON schema of parameters."""
    out: dict[str, dict[str, Any]] = {}
    for tool, request, names in TOOLS:
        by_name = {p.name: p for p in request.PARAMS}
        params = [by_name[n] for n in names] + list(PLUGIN_ONLY.get(tool, ()))
        props = {p.name: _property(p) for p in params}
        for p in params:  # the snake_case aliases, after the names
            if _snake(p.name) != p.name:
                props[_snake(p.name)] = {**_property(p), "description": f"= {p.name}"}
        out[tool] = {
            "type": "object",
            "properties": props,
            "required": [p.name for p in params if p.required],
            "additionalProperties": False,
        }
    return out


def render() -> str:
    """``src/schemas.json`` as ``scripts/gen_config.py`` writes it."""
    return json.dumps(tool_schemas(), indent=2) + "\n"
