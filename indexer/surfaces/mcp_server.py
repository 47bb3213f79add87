"""``memindex mcp``: an MCP server over stdio (official ``mcp`` SDK, optional extra).

Tools memory_search, memory_get and status are the read methods of ``api.METHODS``:
the same parameters (their input schemas are made from the request types' ``Param``
lists; memory_get's first line is ``from``, which is why the low-level server is
used rather than schemas derived from Python signatures) and the same result objects
as the socket's. Each call goes through the running daemon when it serves this
index, else reads the index file directly.

Every line gets an answer. The SDK's parser drops some messages without a reply, so
stdin reaches it through ``_CleanLines``: a lone surrogate (``"\\ud800"``, JSON that
is not valid Unicode) is replaced with U+FFFD, and a line the SDK would ignore — not
JSON, a batch (MCP has none), an ``id`` that JSON-RPC does not allow (``NaN``, an
object) — is answered here with the JSON-RPC error and never reaches it.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import sys
from collections.abc import AsyncIterator
from typing import Any

from indexer import __version__
from indexer.api import METHODS, input_schema
from indexer.config import Config
from indexer.errors import MemindexError
from indexer.surfaces.reading import read_call

__all__ = ["TOOLS", "clean_line", "refusal", "run"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    return value


def clean_line(raw: bytes) -> str:
    """One stdin line for the SDK: text, with lone surrogates (in escapes) replaced."""
    text = raw.decode("utf-8", "replace")
    if "\\u" not in text and "\\U" not in text:
        return text  # no escapes: nothing to scrub
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return text  # the SDK answers a parse error itself
    clean = _scrub(obj)
    return text if clean == obj else json.dumps(clean) + "\n"


def _rpc_error(code: int, message: str) -> str:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return json.dumps(body) + "\n"


def refusal(raw: bytes) -> str | None:
    """The JSON-RPC error reply for a line the SDK would drop silently, or None."""
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        return None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return _rpc_error(-32700, f"parse error: {str(exc)[:200]}")
    if isinstance(obj, list):
        return _rpc_error(-32600, "invalid request: MCP has no batches; send one message per line")
    if not isinstance(obj, dict):
        return _rpc_error(-32600, "invalid request: a message is a JSON object")
    if "id" in obj:
        rid = obj["id"]
        bad = isinstance(rid, bool) or not isinstance(rid, (str, int, float, type(None)))
        if bad or (isinstance(rid, float) and not math.isfinite(rid)):
            return _rpc_error(-32600, "invalid request: 'id' must be a string, a number or null")
    return None


# How long the end of stdin waits for the answers to the requests read before it.
DRAIN_S = 60.0


def _is_request(line: str | bytes) -> bool:
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get("id") is not None and "method" in obj


class _Wire:
    """The file the SDK writes its replies to, counting the answers (lines with an
    ``id`` and no ``method``) it writes."""

    def __init__(self, file: Any) -> None:
        self._file = file
        self.answered = 0

    async def write(self, text: str) -> None:
        for line in text.splitlines():
            if '"id"' in line and not _is_request(line):
                self.answered += 1
        await self._file.write(text)

    async def flush(self) -> None:
        await self._file.flush()


class _CleanLines:
    """An async iterable of ``clean_line``s of the process's stdin; ``refusal``s go
    to ``wire``, the file the SDK writes its replies to (whole lines, flushed). At
    the end of stdin it ends once every request read has its answer: the SDK ends
    the session when its input does, and would cancel the calls still running (a
    client that writes its requests and closes the pipe lost the answers)."""

    def __init__(self, wire: _Wire) -> None:
        import anyio

        self._raw = anyio.wrap_file(sys.stdin.buffer)
        self._wire = wire

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        import anyio

        asked = 0
        async for raw in self._raw:
            reply = refusal(raw)
            if reply is None:
                asked += _is_request(raw)
                yield clean_line(raw)
                continue
            await self._wire.write(reply)
            await self._wire.flush()
            asked += 1  # the refusal just written is counted as an answer
        with anyio.move_on_after(DRAIN_S):
            while self._wire.answered < asked:
                await anyio.sleep(0.01)


def _claim_stdout() -> io.TextIOWrapper:
    """The protocol's stdout as a file of its own, with file descriptor 1 pointed at
    stderr meanwhile: a stray print (a library's, a child's) cannot garble a reply."""
    wire = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return io.TextIOWrapper(wire, encoding="utf-8", write_through=True)


# The read methods, offered as tools: (description, JSON Schema of the params).
TOOLS: dict[str, tuple[str, dict[str, object]]] = {
    name: (m.description, input_schema(name)) for name, m in METHODS.items() if m.read and m.listed
}


def run(cfg: Config) -> int:
    """Serve MCP on stdin/stdout until the client closes the stream."""
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=about, input_schema=schema)
                for name, (about, schema) in TOOLS.items()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        args = dict(params.arguments or {})
        if name not in TOOLS:
            return _error(f"unknown tool '{name}'")
        agent = args.pop("agent", None)
        if agent is not None and agent != cfg.agent_name:  # never another agent's memory
            return _error(f"this MCP server serves agent '{cfg.agent_name}', not '{agent}'")
        try:
            result = await anyio.to_thread.run_sync(read_call, cfg, name, args)
        except MemindexError as exc:
            return _error(exc.message)
        except Exception as exc:  # a bug: still an answer, never silence
            return _error(f"internal error: {type(exc).__name__}")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
        )

    def _error(message: str) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)], is_error=True
        )

    server = Server(
        "memindex", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool
    )

    async def main() -> None:
        wire = _Wire(anyio.wrap_file(_claim_stdout()))
        stdin = _CleanLines(wire)
        async with stdio_server(stdin=stdin, stdout=wire) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    return 0
