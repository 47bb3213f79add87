"""JSON-RPC 2.0 as the socket speaks it: error codes, error replies, one reply
line, a request's id, and ``answer_line``: one request line (or batch) answered by
a handler, within a reply budget. ``server.SocketServer`` frames the lines."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from indexer.errors import DAMAGED_HINT, InvalidParams, MemindexError, UnknownMethod, index_damaged
from indexer.sources.safefs import valid_utf8

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
    "Handler",
    "RpcError",
    "answer_line",
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


def error_reply(id_: Any, code: int, message: str, data: Any = None) -> dict[str, object]:
    err: dict[str, object] = {"code": code, "message": message}
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


log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, object]], Any]  # (method, params) -> result


def answer_line(line: bytes, handler: Handler, max_reply: int) -> bytes | None:
    """One request line -> one reply line (None for notifications only). A batch
    shares one ``max_reply`` budget; a reply over it is replaced by an error."""
    if not line.strip():
        return None
    try:
        obj = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return encode_line(error_reply(None, PARSE_ERROR, f"parse error: {str(exc)[:200]}"))
    if not isinstance(obj, list):
        reply = _answer_one(obj, handler)
        return None if reply is None else _bounded(reply, max_reply)
    if not obj:
        return encode_line(error_reply(None, INVALID_REQUEST, "empty batch"))
    if len(obj) > MAX_BATCH:
        why = f"a batch of {len(obj)} requests: at most {MAX_BATCH} per batch (nothing was run)"
        return encode_line(error_reply(None, INVALID_REQUEST, why))
    budget = max_reply
    parts: list[bytes] = []
    for o in obj:
        if budget <= 0:  # the batch's reply is full: answer the rest briefly
            if not (isinstance(o, dict) and "id" not in o):  # not a notification
                brief = error_reply(request_id(o), REPLY_TOO_LARGE, "batch reply full: not run")
                parts.append(encode_line(brief)[:-1])
            continue
        one = _answer_one(o, handler)
        if one is None:
            continue
        data = _bounded(one, budget)
        budget -= len(data)
        parts.append(data[:-1])
    return (b"[" + b",".join(parts) + b"]\n") if parts else None


def _bounded(reply: dict[str, object], limit: int) -> bytes:
    data = encode_line(reply)
    if len(data) <= limit:
        return data
    return encode_line(
        error_reply(
            reply.get("id"),
            REPLY_TOO_LARGE,
            f"reply of {len(data)} bytes is over the limit of {limit} bytes: ask for fewer "
            "lines (memory_get 'lines') or results",
            {"code": "reply_too_large", "bytes": len(data), "limit": limit},
        )
    )


def _answer_one(obj: Any, handler: Handler) -> dict[str, object] | None:
    """The reply to one request object (None: a notification, never answered)."""
    if not isinstance(obj, dict):
        return error_reply(None, INVALID_REQUEST, "a request is a JSON object")
    id_ = obj.get("id")
    if not (id_ is None or isinstance(id_, (str, int))) or isinstance(id_, bool):
        return error_reply(None, INVALID_REQUEST, "id must be a string, a number or null")
    if isinstance(id_, str) and not valid_utf8(id_):
        return error_reply(None, INVALID_REQUEST, "id is not valid Unicode (a lone surrogate)")
    method = obj.get("method")
    if obj.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return error_reply(id_, INVALID_REQUEST, "expected {jsonrpc: '2.0', method, params?, id}")
    if not valid_utf8(method):
        return error_reply(id_, INVALID_REQUEST, "method is not valid Unicode (a lone surrogate)")
    params = obj.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return error_reply(id_, INVALID_PARAMS, "params must be an object (named parameters)")
    try:
        result = handler(method, params)
    except Exception as exc:
        failed = _error_of(exc, method)
        return None if "id" not in obj else error_reply(id_, *failed)
    if "id" not in obj:
        return None
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def _error_of(exc: Exception, method: str) -> tuple[int, str, Any]:
    """(code, message, data) of the error reply for a handler's exception."""
    if isinstance(exc, RpcError):
        return exc.code, exc.message, exc.data
    if isinstance(exc, UnknownMethod):
        return METHOD_NOT_FOUND, exc.message, {"code": exc.code, "methods": exc.methods}
    if isinstance(exc, UnicodeError):  # a lone surrogate reached a path, a query or a name
        why = "a string parameter is not valid Unicode (a lone surrogate)"
        return INVALID_PARAMS, why, {"code": "invalid_params"}
    if isinstance(exc, InvalidParams):
        return INVALID_PARAMS, exc.message, {"code": exc.code}
    if isinstance(exc, MemindexError):
        return APP_ERROR, exc.message, {"code": exc.code}
    if index_damaged(exc):  # not a bug: the daemon rebuilds it (daemon.py)
        return APP_ERROR, DAMAGED_HINT.format(exc), {"code": "index_corrupt"}
    log.exception("internal error in %s", method)  # a bug: report it, keep serving
    return INTERNAL_ERROR, f"internal error: {type(exc).__name__}", None
