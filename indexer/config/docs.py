"""The config's documentation, written from its one schema (``config.sections`` and
``Config``'s own keys): ``config/memindex.toml`` (every key with its default) and
docs/CONFIG.md's table of keys. ``scripts/gen_config.py`` writes both; a test checks
they match what this renders."""

from __future__ import annotations

import json
import textwrap
from dataclasses import MISSING, Field, fields, is_dataclass
from typing import Any

from indexer.config import Config
from indexer.config.sections import choices_of, doc_of, range_of

__all__ = ["TABLE_END", "TABLE_START", "keys", "render_table", "render_toml"]

TABLE_START = "<!-- config table: written by scripts/gen_config.py -->"
TABLE_END = "<!-- end of config table -->"

_HEADER = """\
# memindex configuration: every key with its default.
# Location: ~/.config/memindex/config.toml (or pass --config FILE).
# Relative paths are relative to this file; ~ and $VARS are expanded.
# (Written from indexer/config/sections.py by scripts/gen_config.py.)
"""

_AGENTS = """\
# Several agents in one daemon: each entry inherits every setting above and may
# override these keys. Requests name their agent ("agent" param); the first is the
# default. Without [[agents]], the daemon serves one agent built from the settings above.
# [[agents]]
# id = "main"
# workspace = "~/.openclaw/workspace"
# sessionsDir = "~/.openclaw/agents/main/sessions"
# indexPath = "~/.local/state/memindex/main.sqlite"
# extraPaths = []
# ignore = []
"""

_AGENTS_ROW = (
    "| `[[agents]]` | — | `id`, `workspace`, `sessionsDir`, `indexPath`, `extraPaths`, "
    "`ignore` | several agents in one daemon, each inheriting every setting above |"
)


def _default(f: Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    assert f.default_factory is not MISSING
    return f.default_factory()


def keys(section: type[Any] = Config, prefix: str = "") -> list[tuple[str, Field[Any]]]:
    """(dotted key, field) of every documented key, sections in ``Config``'s order."""
    out: list[tuple[str, Field[Any]]] = []
    for f in fields(section):
        if "doc" in f.metadata:
            out.append((prefix + f.name, f))
    for f in fields(section):
        value = _default(f) if f.default_factory is not MISSING else None
        if is_dataclass(value):
            out += keys(type(value), f"{prefix}{f.name}.")
    return out


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def _allowed(f: Field[Any]) -> str:
    choices = choices_of(f)
    if choices is not None:
        return ", ".join(c or '""' for c in choices)
    bounds = range_of(f)
    if bounds is None:
        return ""
    lo, hi = bounds
    return f"{_number(lo)} .. {_number(hi)}" if hi is not None else f">= {_number(lo)}"


def _number(x: float | None) -> str:
    assert x is not None
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _comment(text: str) -> list[str]:
    return ["# " + line for line in textwrap.wrap(text, 86)]


def render_toml() -> str:
    """``config/memindex.toml``: each key after its meaning and what it accepts."""
    lines = [_HEADER.rstrip("\n")]
    section = None
    for key, f in keys():
        *parents, name = key.split(".")
        if parents and ".".join(parents) != section:
            section = ".".join(parents)
            lines += ["", f"[{section}]"]
        elif not parents:
            lines.append("")
        allowed = _allowed(f)
        lines += _comment(doc_of(f) + (f" ({allowed})" if allowed else ""))
        value = _default(f)
        if value is None:
            lines.append(f"# {name} = {f.metadata.get('example') or '...'}")
        else:
            lines.append(f"{name} = {_toml(value)}")
            if f.metadata.get("example"):
                lines.append(f"# {name} = {f.metadata['example']}")
    return "\n".join(lines) + "\n\n" + _AGENTS


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_table() -> str:
    """docs/CONFIG.md's table: every key, its default, what it accepts, what it means."""
    rows = ["| key | default | accepts | meaning |", "|---|---|---|---|"]
    for key, f in keys():
        value = _default(f)
        shown = "—" if value is None else f"`{_toml(value)}`"
        allowed = _allowed(f)
        rows.append(
            f"| `{key}` | {shown} | {_cell(allowed)} | {_cell(doc_of(f))} |".replace("|  |", "| |")
        )
    rows.append(_AGENTS_ROW)
    return "\n".join(rows) + "\n"
