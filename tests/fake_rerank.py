"""A rerank server on 127.0.0.1 for the rerank stage's tests, speaking the three
response shapes memindex reads from ``POST /v1/rerank``:

* Voyage (``truncation`` in the request): ``{"object": "list", "data": [{index,
  relevance_score}], "model", "usage"}``;
* Jina / Cohere / llama.cpp's server (``top_n`` in the request): ``{"results":
  [{index, relevance_score}], ...}``, best first;
* TEI (``shape = "tei"``): a plain list ``[{index, score}]``.

A document's score is half the share of the query's words it holds (deterministic,
so a test knows the order); with ``favour`` set, 1.0 for a document holding it and
0.0 for the rest. ``fail_next`` (status, headers,
body) responses come first; ``delay`` slows every answer; ``requests`` keeps each
request body.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from fake_http import FakeServer

_WORDS = re.compile(r"\w+")


def overlap(query: str, doc: str) -> float:
    q = set(_WORDS.findall(query.lower()))
    d = set(_WORDS.findall(doc.lower()))
    return len(q & d) / len(q) if q else 0.0


class FakeRerank(FakeServer):
    def __init__(self, shape: str = "auto") -> None:
        self.shape = shape  # auto (by the request) | tei
        self.fail_next: list[tuple[int, dict[str, str], bytes]] = []
        self.delay = 0.0
        self.favour = ""  # documents holding this score 1.0, the rest 0.0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        super().__init__()

    def answer(self, body: dict[str, Any]) -> Any:
        docs = body["documents"]
        scored = [
            (i, float(self.favour in d) if self.favour else overlap(body["query"], d) / 2)
            for i, d in enumerate(docs)
        ]
        if self.shape == "tei":
            return [{"index": i, "score": s} for i, s in sorted(scored, key=lambda x: -x[1])]
        if "truncation" in body:  # Voyage
            return {
                "object": "list",
                "data": [{"index": i, "relevance_score": s} for i, s in scored],
                "model": body["model"],
                "usage": {"total_tokens": 1},
            }
        ranked = sorted(scored, key=lambda x: -x[1])[: int(body.get("top_n", len(docs)))]
        return {
            "model": body.get("model", "fake"),
            "results": [{"index": i, "relevance_score": s} for i, s in ranked],
            "usage": {"total_tokens": 1},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/v1/rerank":
                    self._send(404, {}, b'{"error":"not found"}')
                    return
                body = json.loads(raw)
                with fake.lock:
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers))
                    failure = fake.fail_next.pop(0) if fake.fail_next else None
                if fake.delay:
                    time.sleep(fake.delay)
                if failure is not None:
                    self._send(*failure)
                    return
                self._send(200, {}, json.dumps(fake.answer(body)).encode())

        return Handler
