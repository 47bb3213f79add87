"""The plugin's tool parameters are the protocol's: integrations/openclaw/src/schemas.json
is what indexer/surfaces/openclaw/schemas.py makes from api.requests' table, and
tools.js reads it (a parameter or range changed in the table reaches the agent's
tool schema through scripts/gen_config.py, and this test fails until it does)."""

from __future__ import annotations

import json
from pathlib import Path

from indexer.api.requests import GetRequest, SearchRequest
from indexer.surfaces.openclaw.schemas import PLUGIN_ONLY, render, tool_schemas

PLUGIN = Path(__file__).resolve().parents[2] / "integrations" / "openclaw"


def test_the_plugin_reads_the_schemas_made_from_the_table() -> None:
    assert (PLUGIN / "src" / "schemas.json").read_text(encoding="utf-8") == render()
    assert 'new URL("./schemas.json", import.meta.url)' in (PLUGIN / "src" / "tools.js").read_text()


def test_each_tool_parameter_is_checked_as_the_socket_checks_it() -> None:
    got = tool_schemas()
    for tool, request in (("memory_search", SearchRequest), ("memory_get", GetRequest)):
        props = got[tool]["properties"]
        own = {p.name for p in PLUGIN_ONLY.get(tool, ())}
        for p in request.PARAMS:
            if p.name in own:  # the plugin answers more (wiki) and hands the rest on
                assert set(p.schema["enum"]) <= set(props[p.name]["enum"]), p.name
            elif p.name in props:
                assert {k: v for k, v in props[p.name].items() if k in p.schema} == dict(p.schema)
    search = got["memory_search"]["properties"]
    assert search["max_results"]["maximum"] == search["maxResults"]["maximum"] == 200
    assert got["memory_search"]["required"] == ["query"] and got["memory_get"]["required"] == [
        "path"
    ]
    assert json.loads(render()) == got
