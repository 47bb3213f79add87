"""The schema's vocabulary: ``setting`` (a key's default, meaning, and the numbers or
words it accepts) and the readers of what a key says of itself (``doc_of``,
``range_of``, ``choices_of``); ``time_zone``, the zone a name means."""

from __future__ import annotations

import math
from dataclasses import Field, field, fields, is_dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from indexer.errors import ConfigError

__all__ = [
    "MiB",
    "Range",
    "check_values",
    "choices_of",
    "doc_of",
    "range_of",
    "setting",
    "time_zone",
]

MiB = 1024 * 1024
Range = tuple[float | None, float | None]  # inclusive; None: unbounded


def setting(
    default: Any,
    doc: str,
    *,
    range: Range | None = None,  # noqa: A002  (the schema's word for it)
    choices: tuple[str, ...] | None = None,
    example: str | None = None,
) -> Any:
    """A key: its default, what it means, and the numbers (``range``) or words
    (``choices``) it accepts (a number is also always finite); ``example``: a TOML
    value the example file shows, commented out, for a key with no default."""
    meta = {"doc": doc, "range": range, "choices": choices, "example": example}
    return field(default=default, metadata=meta)


def doc_of(f: Field[Any]) -> str:
    return str(f.metadata.get("doc", ""))


def range_of(f: Field[Any]) -> Range | None:
    r = f.metadata.get("range")
    return None if r is None else (r[0], r[1])


def choices_of(f: Field[Any]) -> tuple[str, ...] | None:
    c = f.metadata.get("choices")
    return None if c is None else tuple(c)


def time_zone(name: str) -> tzinfo:
    """The IANA time zone ``name`` ("" : the host's own, as its clock says now);
    ValueError when there is no such zone."""
    if not name:
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"no time zone named {name!r} (an IANA name, e.g. Europe/Lisbon)"
        ) from None


def check_values(section: Any, prefix: str, where: str) -> None:
    """Every key of ``section`` (and its nested sections) against its range or choices
    in the schema (``setting``). Floats must also be finite: NaN compares false
    with everything and would pass a plain range check."""
    for f in fields(section):
        value = getattr(section, f.name)
        key = f"{prefix}{f.name}"
        if is_dataclass(value):
            check_values(value, f"{key}.", where)
            continue
        allowed = choices_of(f)
        if allowed is not None and value not in allowed:
            words = ", ".join(c or '""' for c in allowed)
            raise ConfigError(f"{where}: '{key}' must be one of {words} (got {value!r})")
        bounds = range_of(f)
        if bounds is None:
            continue
        lo, hi = bounds
        number = float(value)
        if (
            not math.isfinite(number)
            or (lo is not None and number < lo)
            or (hi is not None and number > hi)
        ):
            told = f"{lo:g} .. {hi:g}" if hi is not None else f">= {lo:g}"
            raise ConfigError(f"{where}: '{key}' must be {told} (got {value!r})")
