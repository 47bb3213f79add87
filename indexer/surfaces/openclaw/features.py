"""OpenClaw's memory features and who serves each with memindex in the memory slot:
the plugin's ``features.json`` (one table, read by ``openclaw memindex status`` too),
resolved for an ``openclaw.json``'s setup (dreaming on or off)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from indexer.config.text_file import read_json5
from indexer.errors import ConfigError
from indexer.openclaw import dig

__all__ = ["feature_table", "features_report", "served"]

WHO = ("memindex", "memory-core", "nobody")


def feature_table() -> list[dict[str, Any]]:
    """The rows of the plugin's features.json."""
    from indexer.surfaces.openclaw.setup import plugin_dir

    data = json.loads((plugin_dir() / "features.json").read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = data["features"]
    return rows


def served(dreaming: bool) -> list[tuple[str, str]]:
    """(who, feature) for every feature, ``who`` one of WHO."""
    out = []
    for f in feature_table():
        by = f["servedBy"]
        who = by if isinstance(by, str) else by["dreaming" if dreaming else "noDreaming"]
        out.append((str(who), str(f["feature"])))
    return out


def features_report(conf: Path) -> str:
    """One line per server for the memory slot an openclaw.json sets up."""
    try:
        data = read_json5(conf)  # a one-line ConfigError for anything it cannot read
    except ConfigError:
        if not conf.exists():
            return f"no OpenClaw config at {conf}"
        raise
    slot = dig(data, "plugins", "slots", "memory") or "memory-core"
    if slot != "memindex":
        return f"{conf}: the memory slot is {slot}'s (`memindex openclaw install` changes that)"
    enabled = dig(data, "plugins", "entries", "memindex", "config", "dreaming", "enabled")
    dreaming = enabled is not False
    by: dict[str, list[str]] = {w: [] for w in WHO}
    for who, feature in served(dreaming):
        by.setdefault(who, []).append(feature)
    parts = [f"{conf}: memindex in the memory slot, dreaming {'on' if dreaming else 'off'}"]
    for who in WHO:
        if by[who]:
            parts.append(f"served by {who}: " + "; ".join(by[who]))
    return "\n".join(parts)


def _who(by: Any) -> str:
    if isinstance(by, str):
        return "**nobody**" if by == "nobody" else by
    on, off = by["dreaming"], by["noDreaming"]
    return f"{_who(on)} (dreaming on), {_who(off)} (dreaming off)"


def markdown_table() -> str:
    """docs/OPENCLAW.md's table of OpenClaw's memory features (tests/surfaces/test_readme.py)."""
    lines = [
        "| OpenClaw 2026.9 memory feature | memory-core | memindex in the slot | shown by |",
        "|---|---|---|---|",
    ]
    for f in feature_table():
        who = _who(f["servedBy"]) + (f" — {f['note']}" if f.get("note") else "")
        tests = ", ".join(f"`{t.strip()}`" for t in f["test"].split(",")) if f.get("test") else "—"
        lines.append(f"| {f['feature']} | yes | {who} | {tests} |")
    return "\n".join(lines) + "\n"
