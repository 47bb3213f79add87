"""A small OpenAI-compatible HTTP server on 127.0.0.1 for provider tests.

Voyage's embeddings endpoint has the same request and response shape (plus
``input_type`` and ``output_dimension``), so the Voyage tests use this server too;
Gemini's ``models/{model}:batchEmbedContents`` is served as well.

Speaks the wire protocol the ``openai`` SDK uses: POST /v1/embeddings, POST /v1/files
(multipart), POST /v1/batches, GET /v1/batches/{id}, GET /v1/files/{id}/content.
Vectors are deterministic bag-of-words hashes, so related texts are close. Failures
are scripted: ``fail_next`` (status, headers, body) responses are returned first,
``delay`` slows every embeddings response, ``batch_polls`` sets how many polls a job
stays in progress, ``batch_outcome`` can make jobs fail or expire.
"""

from __future__ import annotations

import email.parser
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

import numpy as np
from fake_http import FakeServer

from providers.calibration import PAIRS

CALIBRATION = (PAIRS[0][0], PAIRS[0][1])  # in every calibration request


def fake_vector(text: str, dims: int) -> list[float]:
    v = np.zeros(dims, dtype=np.float64)
    for word in text.lower().split():
        h = int(hashlib.sha256(word.strip(".,!?").encode()).hexdigest(), 16)
        v[h % dims] += 1.0 if (h >> 8) & 1 else -1.0
    if not v.any():  # words cancelled out: still a valid, non-zero vector
        v[len(text) % dims] = 1.0
    return [float(x) for x in v / np.linalg.norm(v)]


class FakeOpenAI(FakeServer):
    def __init__(self, dims: int = 64) -> None:
        self.dims = dims
        self.fail_next: list[tuple[int, dict[str, str], bytes]] = []
        self.delay = 0.0
        self.batch_polls = 1
        self.batch_outcome = "completed"
        self.calls: list[tuple[str, str]] = []  # (method, path)
        self.calibrations: list[str] = []  # paths of the calibration requests
        self.embed_inputs: list[int] = []  # inputs per embeddings request
        self.input_types: list[str | None] = []  # Voyage's document / query
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        super().__init__()

    def count(self, method: str, prefix: str) -> int:
        return sum(1 for m, p in self.calls if m == method and p.startswith(prefix))

    # -- protocol ------------------------------------------------------------------------

    def _embeddings(self, body: dict[str, Any], log: bool = True) -> dict[str, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dims = int(body.get("dimensions") or body.get("output_dimension") or self.dims)
        if log:
            self.embed_inputs.append(len(inputs))
            self.input_types.append(body.get("input_type"))
        return {
            "object": "list",
            "model": body["model"],
            "data": [
                {"object": "embedding", "index": i, "embedding": fake_vector(t, dims)}
                for i, t in enumerate(inputs)
            ],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }

    def _gemini(self, body: dict[str, Any], log: bool = True) -> dict[str, Any]:
        reqs = body["requests"]
        if log:
            self.embed_inputs.append(len(reqs))
            self.input_types.extend(r.get("taskType") for r in reqs)
        out = []
        for r in reqs:
            text = " ".join(p.get("text", "") for p in r["content"]["parts"])
            out.append(
                {"values": fake_vector(text, int(r.get("outputDimensionality") or self.dims))}
            )
        return {"embeddings": out}

    def _batch_json(self, b: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": b["id"],
            "object": "batch",
            "endpoint": "/v1/embeddings",
            "errors": None,
            "input_file_id": b["input_file_id"],
            "completion_window": "24h",
            "status": b["status"],
            "output_file_id": b.get("output_file_id"),
            "error_file_id": None,
            "created_at": 1,
            "request_counts": {"total": b["total"], "completed": 0, "failed": 0},
        }

    def _poll(self, b: dict[str, Any]) -> None:
        b["polls"] += 1
        if b["status"] != "in_progress" or b["polls"] < self.batch_polls:
            return
        if self.batch_outcome != "completed":
            b["status"] = self.batch_outcome
            return
        out = []
        for line in self.files[b["input_file_id"]].decode().splitlines():
            req = json.loads(line)
            req["body"] = {**b.get("params", {}), **req["body"]}
            out.append(
                json.dumps(
                    {
                        "id": f"req-{len(out)}",
                        "custom_id": req["custom_id"],
                        "response": {
                            "status_code": 200,
                            "request_id": "r",
                            "body": self._embeddings(req["body"]),
                        },
                        "error": None,
                    }
                )
            )
        fid = f"file-out-{len(self.files)}"
        self.files[fid] = ("\n".join(out) + "\n").encode()
        b["status"], b["output_file_id"] = "completed", fid

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class H(BaseHTTPRequestHandler):
            # One request per connection: once stopped, the server is really gone
            # (no kept-alive connection keeps answering).
            protocol_version = "HTTP/1.0"

            def log_message(self, *a: object) -> None:
                pass

            def _send(
                self,
                status: int,
                obj: Any = None,
                headers: dict[str, str] | None = None,
                raw: bytes | None = None,
            ) -> None:
                data = raw if raw is not None else json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _scripted(self) -> bool:
                with fake.lock:
                    item = fake.fail_next.pop(0) if fake.fail_next else None
                if item is None:
                    return False
                status, headers, body = item
                self._send(status, headers=headers, raw=body)
                return True

            def do_POST(self) -> None:  # noqa: N802
                body = self._body()
                if any(t.encode() in body for t in CALIBRATION):
                    # The model's similarity scale, measured once per model
                    # (providers.calibration): answered, counted apart from the calls
                    # a test counts, and never given a scripted failure.
                    fake.calibrations.append(self.path)
                    req = json.loads(body)
                    gemini = ":batchEmbedContents" in self.path
                    self._send(
                        200, fake._gemini(req, False) if gemini else fake._embeddings(req, False)
                    )
                    return
                fake.calls.append(("POST", self.path))
                if ":asyncBatchEmbedContent" in self.path:  # Gemini batch job
                    if self._scripted():
                        return
                    reqs = [
                        r["request"]
                        for r in json.loads(body)["batch"]["inputConfig"]["requests"]["requests"]
                    ]
                    bid = f"batches/g{len(fake.batches)}"
                    fake.batches[bid] = {
                        "id": bid,
                        "gemini": reqs,
                        "status": "in_progress",
                        "polls": 0,
                        "total": len(reqs),
                    }
                    self._send(200, {"name": bid, "metadata": {"state": "BATCH_STATE_PENDING"}})
                    return
                if ":batchEmbedContents" in self.path:  # Gemini
                    if self.headers.get("x-goog-api-key") != "sk-test":
                        self._send(
                            403,
                            {
                                "error": {
                                    "code": 403,
                                    "message": "bad key",
                                    "status": "PERMISSION_DENIED",
                                }
                            },
                        )
                        return
                    if self._scripted():
                        return
                    time.sleep(fake.delay)
                    self._send(200, fake._gemini(json.loads(body)))
                    return
                if self.headers.get("Authorization") != "Bearer sk-test":
                    self._send(401, {"error": {"message": "bad key", "type": "auth"}})
                    return
                if self._scripted():
                    return
                if self.path == "/v1/embeddings":
                    time.sleep(fake.delay)
                    self._send(200, fake._embeddings(json.loads(body)))
                elif self.path == "/v1/files":
                    ctype = self.headers["Content-Type"]
                    msg = email.parser.BytesParser().parsebytes(
                        f"Content-Type: {ctype}\r\n\r\n".encode() + body
                    )
                    payload = b""
                    for part in msg.get_payload():  # type: ignore[union-attr]
                        if part.get_param("name", header="content-disposition") == "file":
                            payload = part.get_payload(decode=True)
                    fid = f"file-{len(fake.files)}"
                    fake.files[fid] = payload
                    self._send(
                        200,
                        {
                            "id": fid,
                            "object": "file",
                            "bytes": len(payload),
                            "created_at": 1,
                            "filename": "x.jsonl",
                            "purpose": "batch",
                        },
                    )
                elif self.path == "/v1/batches":
                    req = json.loads(body)
                    bid = f"batch-{len(fake.batches)}"
                    total = len(fake.files[req["input_file_id"]].splitlines())
                    fake.batches[bid] = {
                        "id": bid,
                        "input_file_id": req["input_file_id"],
                        "status": "in_progress",
                        "polls": 0,
                        "total": total,
                        # Voyage: the model and input type apply to every line
                        "params": req.get("request_params") or {},
                    }
                    self._send(200, fake._batch_json(fake.batches[bid]))
                else:
                    self._send(404, {"error": {"message": "no such route"}})

            def do_GET(self) -> None:  # noqa: N802
                fake.calls.append(("GET", self.path))
                if self._scripted():
                    return
                if self.path.startswith("/v1beta/batches/"):  # Gemini
                    b = fake.batches.get(self.path.removeprefix("/v1beta/"))
                    if b is None:
                        self._send(404, {"error": {"code": 404, "message": "no such batch"}})
                        return
                    b["polls"] += 1
                    if b["polls"] < fake.batch_polls:
                        state, output = "BATCH_STATE_RUNNING", None
                    elif fake.batch_outcome != "completed":
                        state, output = "BATCH_STATE_" + fake.batch_outcome.upper(), None
                    else:
                        state = "BATCH_STATE_SUCCEEDED"
                        out = fake._gemini({"requests": b["gemini"]})["embeddings"]
                        output = {
                            "inlinedResponses": {
                                "inlinedResponses": [{"response": {"embedding": e}} for e in out]
                            }
                        }
                    meta: dict[str, Any] = {"state": state}
                    if output:
                        meta["output"] = output
                    self._send(200, {"name": b["id"], "metadata": meta})
                    return
                if self.path.startswith("/v1/batches/"):
                    b = fake.batches.get(self.path.rsplit("/", 1)[1])
                    if b is None:
                        self._send(404, {"error": {"message": "no such batch"}})
                        return
                    with fake.lock:
                        fake._poll(b)
                    self._send(200, fake._batch_json(b))
                elif self.path.startswith("/v1/files/") and self.path.endswith("/content"):
                    fid = self.path.split("/")[3]
                    self._send(200, raw=fake.files[fid])
                else:
                    self._send(404, {"error": {"message": "no such route"}})

        return H
