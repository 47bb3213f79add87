"""memindex mcp, driven by the MCP SDK's own client over stdio."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from conftest import Runner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from indexer import api


def session_calls(
    workspace: Path, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[Any, list[Any]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "indexer.surfaces.cli",
            "--workspace",
            str(workspace),
            "--agent",
            "main",
            "mcp",
        ],
        env=dict(os.environ),
    )

    async def go() -> tuple[Any, list[Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = await s.list_tools()
            results = [await s.call_tool(name, args) for name, args in calls]
            return tools, results

    return anyio.run(go)


def test_mcp_tools_and_results(cli: Runner, workspace: Path) -> None:
    code, _, err = cli("--workspace", str(workspace), "--agent", "main", "index")
    assert code == 0, err
    tools, results = session_calls(
        workspace,
        [
            ("memory_search", {"query": "rye bread"}),
            ("memory_get", {"path": "MEMORY.md", "from": 4, "lines": 1}),
            ("status", {}),
            ("memory_get", {"path": "../../etc/passwd"}),
            ("memory_search", {"query": "rye", "agent": "someone-else"}),
        ],
    )
    by_name = {t.name: t for t in tools.tools}
    assert set(by_name) == {"memory_search", "memory_get", "memory_audit", "status"}
    assert set(by_name["memory_get"].input_schema["properties"]) == {
        "path",
        "from",
        "lines",
        "raw",
        "agent",
    }
    for name, tool in by_name.items():  # the socket's request types, as JSON Schema
        assert tool.input_schema == api.input_schema(name)
        assert tool.description == api.METHODS[name].description
    assert by_name["memory_search"].input_schema["required"] == ["query"]
    assert by_name["memory_search"].input_schema["properties"]["mode"]["enum"] == [
        "keyword",
        "vector",
        "hybrid",
    ]
    search = json.loads(results[0].content[0].text)
    top = search["results"][0]
    assert top["path"] == "MEMORY.md" and top["citation"].startswith("MEMORY.md#L")
    assert set(search) == {"results", "provider", "model", "mode", "fallback"}
    got = json.loads(results[1].content[0].text)
    assert got["text"] == "- Dana likes rye bread." and got["from"] == 4
    assert json.loads(results[2].content[0].text)["sources"]["memory"]["files"] == 3
    assert results[3].is_error and "refused" in results[3].content[0].text
    assert results[4].is_error and "serves agent 'main'" in results[4].content[0].text


def test_mcp_answers_lines_the_sdk_would_drop(workspace: Path) -> None:
    """JSON-RPC asks for an error reply to a line that is not JSON, to a batch (MCP
    has none) and to an id that is not a string, number or null; the SDK said
    nothing, and its client waited."""
    import subprocess

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    lines = [
        json.dumps(init),
        "this is not json",
        json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
        '{"jsonrpc": "2.0", "id": NaN, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}',
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexer.surfaces.cli", "--workspace", str(workspace), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        replies = []
        for line in proc.stdout:
            replies.append(json.loads(line))
            if replies[-1].get("id") == 3:
                break
    finally:
        proc.kill()
        proc.wait()
    errors = [r["error"] for r in replies if "error" in r]
    assert [e["code"] for e in errors] == [-32700, -32600, -32600, -32600], replies
    assert "batches" in errors[1]["message"] and "'id'" in errors[2]["message"]
    assert replies[-1] == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_mcp_answers_every_request_sent_before_stdin_closed(cli: Runner, workspace: Path) -> None:
    """A client that writes its requests and closes the pipe (a shell pipeline) gets
    every answer: the SDK ended the session at the end of its input and cancelled
    the tool calls still running (only ids 1 and 4 came back, exit 0)."""
    import subprocess

    assert cli("--workspace", str(workspace), "index")[0] == 0
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    call = {"name": "memory_search", "arguments": {"query": "rye"}}
    get = {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}
    lines = [
        json.dumps(init),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}),
        "garbage {{{",  # answered at once, with id null: not an answer to 2 or 3
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": get}),
        "[]",
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "indexer.surfaces.cli", "--workspace", str(workspace), "mcp"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines()) if r["id"]}
    assert sorted(replies) == [1, 2, 3, 4], done.stdout
    assert not replies[2]["result"].get("isError") and not replies[3]["result"].get("isError")
