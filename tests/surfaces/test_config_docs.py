"""The config's one schema (indexer/config/sections.py) is what the file is checked
against and what its documentation says: the example file and docs/CONFIG.md's table
are written from it, and every range and choice in it is enforced."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest

from indexer.config import Config
from indexer.config.docs import keys, render_table, render_toml
from indexer.config.file import parse_config
from indexer.config.sections import choices_of, range_of
from indexer.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_the_example_file_and_the_config_page_table_are_written_from_the_schema() -> None:
    assert (REPO / "config" / "memindex.toml").read_text(encoding="utf-8") == render_toml()
    assert render_table() in (REPO / "docs" / "CONFIG.md").read_text(encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_config.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_example_file_holds_every_default() -> None:
    path = REPO / "config" / "memindex.toml"
    cfg, agents = parse_config(tomllib.loads(path.read_text(encoding="utf-8")), source=path)
    assert agents == ()
    defaults = Config()
    for f in fields(Config):
        if is_dataclass(getattr(defaults, f.name)):
            assert getattr(cfg, f.name) == getattr(defaults, f.name), f.name


def test_every_key_is_documented() -> None:
    documented = {k for k, _ in keys()}

    def all_keys(obj: Any, prefix: str = "") -> set[str]:
        out = set()
        for f in fields(obj):
            value = getattr(obj, f.name)
            if is_dataclass(value):
                out |= all_keys(value, f"{prefix}{f.name}.")
            elif f.name != "source":
                out.add(prefix + f.name)
        return out

    assert all_keys(Config()) == documented
    assert len(documented) > 70


def _raw(key: str, value: Any) -> dict[str, Any]:
    *sections, name = key.split(".")
    raw: dict[str, Any] = {}
    node = raw
    for s in sections:
        node = node.setdefault(s, {})
    node[name] = value
    return raw


RANGED = [(k, f) for k, f in keys() if range_of(f) is not None]
CHOSEN = [(k, f) for k, f in keys() if choices_of(f) is not None]


@pytest.mark.parametrize(("key", "f"), RANGED, ids=[k for k, _ in RANGED])
def test_every_range_in_the_schema_is_enforced(key: str, f: Any) -> None:
    lo, hi = range_of(f)  # type: ignore[misc]
    kind = type(f.default)
    outside = [lo - 1 if kind is int else lo - 0.5] if lo is not None else []
    if hi is not None:
        outside.append(kind(hi + 1))
    if kind is float:
        outside.append(float("nan"))
    for value in outside:
        with pytest.raises(ConfigError, match=f"'{key}' must be"):
            parse_config(_raw(key, kind(value)))
    parse_config(_raw(key, f.default))  # the default is inside


@pytest.mark.parametrize(("key", "f"), CHOSEN, ids=[k for k, _ in CHOSEN])
def test_every_choice_in_the_schema_is_enforced(key: str, f: Any) -> None:
    with pytest.raises(ConfigError, match=f"'{key}' must be one of"):
        parse_config(_raw(key, "no-such-thing"))
