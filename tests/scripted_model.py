"""A scripted model for the real OpenClaw gateway: an OpenAI-compatible chat
completions server on 127.0.0.1 (OpenClaw's custom provider, ``api:
"openai-completions"``, ``baseUrl`` pointing here), streaming as OpenAI does.

The script, decided from each request, plays an agent that uses its memory:

* the pre-compaction memory flush turn (its prompt starts "Pre-compaction memory
  flush") calls ``write`` on the file the prompt names with ``flush_note``, then
  answers ``NO_REPLY``;
* a request without tools is compaction's summarizer: a summary;
* Active Memory's recall sub-agent ("You are a memory search agent."): it calls
  ``memory_search`` with the bounded query it was given, then answers with the
  snippets it got back (``NONE`` when there were none): what the main reply's
  ``<active_memory_plugin>`` block then holds;
* a user message "recall <words>" calls ``memory_search`` with the words; the tool's
  answer is then quoted back in the reply (so the test sees what the agent saw);
* a user message "intend <KEYWORD>: <text>" calls the ``intent`` tool, creating a
  standing intent triggered by the keyword, whose description is the text;
  Active Memory's hidden block in front of a user's message is not the user's words;
* anything else is acknowledged.

Every request is kept in ``requests`` (the parsed body) for the test to look at, and
what each recall sub-agent's ``memory_search`` returned in ``recalls``.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedModel"]

_INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
_RECALL_AGENT = "You are a memory search agent."
_AM_BLOCK = re.compile(r"<active_memory_plugin>.*?</active_memory_plugin>", re.S)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class ScriptedModel:
    def __init__(self, flush_note: str = "- FLUSH-MARKER-31337: the user keeps bees") -> None:
        self.flush_note = flush_note
        self.requests: list[dict[str, Any]] = []
        self.tool_calls: list[tuple[str, dict[str, Any]]] = []
        self.recalls: list[dict[str, Any]] = []  # {"query", "result"} per recall search
        self._lock = threading.Lock()
        self._n = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    req = json.loads(body or b"{}")
                except ValueError:
                    req = {}
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error":{"message":"not found"}}', "application/json")
                    return
                self._send(200, model.answer(req, len(body)), "text/event-stream")

            def _send(self, code: int, data: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> ScriptedModel:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- the script ----------------------------------------------------------------------

    def decide(self, req: dict[str, Any]) -> dict[str, Any]:
        messages = req.get("messages") or []
        system = "\n".join(
            _text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
        )
        tools = {str((t.get("function") or {}).get("name")) for t in req.get("tools") or []}
        tail: list[dict[str, Any]] = []  # what came after the model last spoke
        for m in reversed(messages):
            if m.get("role") == "assistant":
                break
            tail.insert(0, m)
        results = [_text(m.get("content")) for m in tail if m.get("role") == "tool"]
        user = "\n".join(
            _AM_BLOCK.sub("", t)
            for m in tail
            if m.get("role") == "user" and not (t := _text(m.get("content"))).startswith(_INTERNAL)
        )
        first_user = next(
            (_text(m.get("content")) for m in messages if m.get("role") == "user"), ""
        )
        if _RECALL_AGENT in first_user and "memory_search" in tools:
            return self._recall_agent(first_user, results)
        if "Pre-compaction memory flush" in system + user:
            if results:
                return {"text": "NO_REPLY"}
            target = re.search(r"memory/\d{4}-\d{2}-\d{2}\.md", system + user)
            path = target.group(0) if target else "memory/flush.md"
            return {"tool": "write", "args": {"path": path, "content": self.flush_note + "\n"}}
        if not tools:
            return {"text": "## Decisions\nThe conversation so far, summarised.\n"}
        if results:
            return {"text": "From memory: " + results[-1].replace("\n", " ")[:4000]}
        intend = re.search(r"\bintend\s+(\w+):\s*(.+)", user, re.I)
        if intend and "intent" in tools:
            keyword, text = intend.group(1), intend.group(2).strip().splitlines()[0]
            return {
                "tool": "intent",
                "args": {"action": "create", "description": text, "triggerKeywords": [keyword]},
            }
        asked = re.search(r"\brecall\s+(.+)", user, re.I)
        if asked and "memory_search" in tools:
            query = asked.group(1).strip().splitlines()[0].strip(" .?")
            return {"tool": "memory_search", "args": {"query": query}}
        return {"text": "Noted."}

    def _recall_agent(self, prompt: str, results: list[str]) -> dict[str, Any]:
        asked = re.search(r"Bounded memory search query:\n(.+)", prompt)
        query = asked.group(1).strip() if asked else prompt[-200:]
        if not results:
            return {"tool": "memory_search", "args": {"query": query}}
        with self._lock:
            self.recalls.append({"query": query, "result": results[-1]})
        try:
            got = json.loads(results[-1]).get("results") or []
        except ValueError:
            got = []
        if not got:
            return {"text": "NONE"}
        return {"text": " | ".join(str(h.get("snippet", ""))[:150] for h in got)[:900]}

    def answer(self, req: dict[str, Any], size: int) -> bytes:
        with self._lock:
            self._n += 1
            n = self._n
            self.requests.append(req)
        d = self.decide(req)
        base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0,
                "model": req.get("model", "scripted")}  # fmt: skip
        chunks: list[dict[str, Any]] = []
        if "tool" in d:
            with self._lock:
                self.tool_calls.append((d["tool"], d["args"]))
            call = {"index": 0, "id": f"call_{n}", "type": "function",
                    "function": {"name": d["tool"], "arguments": ""}}  # fmt: skip
            args = {"index": 0, "function": {"arguments": json.dumps(d["args"])}}
            chunks.append({"role": "assistant", "content": None, "tool_calls": [call]})
            chunks.append({"tool_calls": [args]})
            finish = "tool_calls"
        else:
            chunks.append({"role": "assistant", "content": ""})
            chunks.append({"content": d["text"]})
            finish = "stop"
        events = [
            {**base, "choices": [{"index": 0, "delta": c, "finish_reason": None}]} for c in chunks
        ]
        events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        tokens = size // 4
        usage = {"prompt_tokens": tokens, "completion_tokens": 8, "total_tokens": tokens + 8}
        events.append({**base, "choices": [], "usage": usage})
        return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + (
            b"data: [DONE]\n\n"
        )
