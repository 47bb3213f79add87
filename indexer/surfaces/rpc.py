"""JSON-RPC 2.0 as the socket speaks it: error codes, error replies, one reply
line, a request's id. ``server.SocketServer`` frames and dispatches with these."""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "APP_ERROR",
    "BUSY",
    "FORBIDDEN",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_BATCH",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REPLY_TOO_LARGE",
    "TOO_LARGE",
    "RpcError",
    "encode_line",
    "error_reply",
    "request_id",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
APP_ERROR = -32000  # memindex errors; data.code says which
TOO_LARGE = -32001
REPLY_TOO_LARGE = -32002
FORBIDDEN = -32003
BUSY = -32004


MAX_BATCH = 100  # requests in one batch; a larger batch gets one error, nothing runs


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def error_reply(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": err}


def encode_line(obj: Any) -> bytes:
    """One reply line. UTF-8 as is; a reply carrying a lone surrogate (echoed from a
    request) falls back to ASCII escapes, which are always valid JSON and UTF-8."""
    try:
        return json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(obj).encode("ascii") + b"\n"


def request_id(obj: Any) -> Any:
    id_ = obj.get("id") if isinstance(obj, dict) else None
    return id_ if isinstance(id_, (str, int)) and not isinstance(id_, bool) else None
