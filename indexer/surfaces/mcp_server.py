"""``memindex mcp``: an MCP server over stdio (official ``mcp`` SDK, optional extra).

Tools memory_search, memory_get and status are the read methods of ``api.METHODS``:
the same parameters (their input schemas are made from the request types' ``Param``
lists; memory_get's first line is ``from``, which is why the low-level server is
used rather than schemas derived from Python signatures) and the same result objects
as the socket's. Each call goes through the running daemon when it serves this
index, else reads the index file directly.

JSON can carry a lone surrogate (``"\\ud800"``) that is not valid Unicode; the SDK's
parser drops such a message without a reply, so stdin reaches it through
``_clean_lines``, which replaces lone surrogates with U+FFFD: every request is
answered.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from typing import Any

from indexer import __version__
from indexer.api import METHODS, input_schema
from indexer.config import Config
from indexer.errors import MemindexError
from indexer.surfaces.reading import read_call

__all__ = ["TOOLS", "clean_line", "run"]

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


class _CleanLines:
    """An async iterable of ``clean_line``s of the process's stdin."""

    def __init__(self) -> None:
        import anyio

        self._raw = anyio.wrap_file(sys.stdin.buffer)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for raw in self._raw:
            yield clean_line(raw)


TOOLS: dict[str, dict[str, Any]] = {
    name: {"description": m.description, "schema": input_schema(name)}
    for name, m in METHODS.items()
    if m.read
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
                types.Tool(name=name, description=t["description"], input_schema=t["schema"])
                for name, t in TOOLS.items()
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
        async with stdio_server(stdin=_CleanLines()) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    return 0
