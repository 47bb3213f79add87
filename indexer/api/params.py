"""Readers of raw JSON request values: each checks one parameter and says what is
wrong with it (``InvalidParams``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from datetime import datetime
from typing import Any

from indexer.config.schema import time_zone
from indexer.config.stages import StagesConfig
from indexer.errors import InvalidParams

__all__ = [
    "SOURCES",
    "as_of_value",
    "bool_value",
    "camel",
    "int_value",
    "projects_value",
    "sources_value",
    "stages_value",
    "zone_value",
]

SOURCES = ("memory", "sessions")
_CORPUS = {"all": None, "memory": ("memory",), "sessions": ("sessions",)}


def int_value(params: Mapping[str, Any], name: str, minimum: int) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParams(f"'{name}' must be an integer")
    if value < minimum:
        raise InvalidParams(f"'{name}' must be >= {minimum}")
    return value


def bool_value(params: Mapping[str, Any], name: str) -> bool:
    value = params.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidParams(f"'{name}' must be true or false")
    return value


def sources_value(params: Mapping[str, Any]) -> tuple[str, ...] | None:
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
_SNAKE = {
    "max_results": "maxResults",
    "min_score": "minScore",
    "start_line": "from",
    "as_of": "asOf",
    "time_zone": "timeZone",
}


def camel(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """``params`` with snake_case names as their camelCase ones (the camelCase wins)."""
    if not any(k in params for k in _SNAKE):
        return params
    out = dict(params)
    for snake, camel in _SNAKE.items():
        if snake in out:
            value = out.pop(snake)
            out.setdefault(camel, value)
    return out


def as_of_value(params: Mapping[str, Any]) -> datetime | None:
    value = params.get("asOf")
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= 64:
        try:
            got = datetime.fromisoformat(value.strip())
        except ValueError:
            got = None
        if got is not None and 1900 <= got.year <= 2999:
            return got
    raise InvalidParams(
        "'asOf' must be an ISO 8601 date or time from 1900 to 2999, e.g. 2026-11-27T09:00:00Z"
    )


def zone_value(params: Mapping[str, Any]) -> str | None:
    value = params.get("timeZone")
    if value is None or value == "":
        return None
    if isinstance(value, str) and len(value) <= 64:
        try:
            time_zone(value)
            return value
        except ValueError as exc:
            raise InvalidParams(f"'timeZone': {exc}") from None
    raise InvalidParams("'timeZone' must be an IANA time zone name, e.g. Europe/Lisbon")


def projects_value(params: Mapping[str, Any]) -> tuple[str, ...]:
    value = params.get("activeProjectKeys")
    if value is None:
        return ()
    if (
        not isinstance(value, list)
        or len(value) > 16
        or not all(isinstance(k, str) and 0 < len(k) <= 512 for k in value)
    ):
        raise InvalidParams("'activeProjectKeys' must be a list of at most 16 strings")
    return tuple(k.strip() for k in value)


def stages_value(params: Mapping[str, Any]) -> tuple[tuple[str, bool], ...]:
    """``stages``: {stage name: on} for stages of ``query.stages``."""
    raw = params.get("stages")
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise InvalidParams("'stages' must be an object of stage names and true/false")
    known = [f.name for f in fields(StagesConfig)]
    out: list[tuple[str, bool]] = []
    for name, on in raw.items():
        if name not in known:
            raise InvalidParams(f"'stages': no stage named {name!r} (known: {', '.join(known)})")
        if not isinstance(on, bool):
            raise InvalidParams(f"'stages.{name}' must be true or false")
        out.append((name, on))
    return tuple(out)
