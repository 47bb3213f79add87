"""Fuzzing with hypothesis: every bad input is a clear error or a counted skip.

* socket: random bytes, invalid UTF-8, deep nesting, huge numbers, wrong types,
  partial frames and slow clients against the real daemon; it must answer each
  complete line and keep serving (a ping after every example);
* transcripts: arbitrary bytes and arbitrary JSON shapes per JSONL line;
* Markdown files: NUL bytes, BOMs, giant lines, mixed line endings, unclosed
  fences, deep nesting, through the real sync (indexed or skipped with a reason,
  the store consistent);
* config files: arbitrary TOML documents (ConfigError or a config, nothing else).

``MEMINDEX_FUZZ_EXAMPLES`` scales the example counts (default 1: about 1,000 cases).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import write
from daemon_util import DaemonProc, child_env, daemon_config, rpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.config import Config
from indexer.config.file import parse_config
from indexer.engine import AgentIndex
from indexer.errors import ConfigError
from indexer.sources.chunking import chunk_markdown, split_lines
from indexer.sources.tokenizer import get_counter
from indexer.sources.transcripts.sessions import Malformed, parse_message

pytestmark = pytest.mark.slow

SCALE = int(os.environ.get("MEMINDEX_FUZZ_EXAMPLES", "1"))
FAST = settings(
    max_examples=200 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)

# -- transcripts ---------------------------------------------------------------------


@FAST
@given(st.binary(max_size=300))
def test_any_bytes_as_a_jsonl_line(raw: bytes) -> None:
    try:
        msg = parse_message(raw)
    except Malformed:
        return
    assert msg is None or (msg.role in ("user", "assistant") and msg.text.strip())


@FAST
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["message", "tool", 3, None]) | json_values,
            "role": st.sampled_from(["user", "assistant", "system"]) | json_values,
            "content": json_values
            | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": json_values})),
            "message": json_values,
            "timestamp": json_values,
            "speaker": json_values,
        },
    )
)
def test_any_json_shape_as_a_message(obj: dict[str, Any]) -> None:
    msg = parse_message(json.dumps(obj).encode())
    if msg is not None:
        assert msg.role in ("user", "assistant") and msg.text.strip()
        assert "\n" not in msg.render()


# -- Markdown ------------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "\x00",
        "\ufeff",
        "\r\n",
        "\r",
        "\n",
        "```",
        "```python\n",
        "~~~",
        "#",
        "# Heading\n",
        "> " * 50,
        "- " * 30,
        "  " * 40 + "- deep\n",
        "x" * 5000,
        "word ",
        "東京",
        "\u202e",
        "\udcff".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
        "---\n",
        "<!-- ",
        "|a|b|\n",
    ]
)
markdown_text = st.lists(_PIECES | st.text(max_size=30), max_size=60).map("".join)


@FAST
@given(markdown_text)
def test_chunker_lines_cover_any_text(text: str) -> None:
    lines = split_lines(text)
    chunks = chunk_markdown(text, get_counter(), tokens=60, overlap=12)
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])


@pytest.fixture(scope="module")
def fuzz_ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentIndex]:
    root = tmp_path_factory.mktemp("fuzzws")
    write(root / "ws", "MEMORY.md", "# Memory\n- anchor note\n")
    cfg = Config(workspace=root / "ws", indexPath=root / "i.sqlite")
    with AgentIndex(cfg) as idx:
        yield idx


@settings(
    max_examples=60 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.one_of(
        markdown_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.binary(max_size=2000),
        markdown_text.map(lambda t: t.encode("utf-16")),
    )
)
def test_any_file_is_indexed_or_skipped_with_a_reason(fuzz_ws: AgentIndex, data: bytes) -> None:
    ws = fuzz_ws.cfg.workspace
    assert ws is not None
    (ws / "memory").mkdir(exist_ok=True)
    (ws / "memory" / "fuzz.md").write_bytes(data)
    rep = fuzz_ws.sync().to_json()
    skipped = {s["path"]: s["reason"] for s in rep["skipped"] + rep["errors"]}
    indexed = fuzz_ws.store.db.execute(
        "SELECT count(*) FROM files WHERE path = 'memory/fuzz.md'"
    ).fetchone()[0]
    assert indexed == 1 or skipped.get("memory/fuzz.md"), rep
    assert fuzz_ws.store.consistency() == []
    assert fuzz_ws.search("anchor note")["results"]  # the rest still answers


# -- config ----------------------------------------------------------------------------

_KEYS = st.sampled_from(
    [
        "workspace",
        "agentId",
        "indexPath",
        "extraPaths",
        "ignore",
        "chunking",
        "query",
        "hybrid",
        "provider",
        "sessions",
        "agents",
        "sync",
        "server",
        "cache",
        "limits",
        "bogus",
    ]
)
_SUB = st.sampled_from(
    ["tokens", "overlap", "maxResults", "minScore", "vectorWeight", "fusion", "name", "dir", "x"]
)
config_docs = st.dictionaries(
    _KEYS,
    json_values.filter(lambda v: v is not None)
    | st.dictionaries(_SUB, json_values.filter(lambda v: v is not None), max_size=3)
    | st.lists(st.dictionaries(_SUB | _KEYS, st.text(max_size=10), max_size=3), max_size=2),
    max_size=5,
)


@FAST
@given(config_docs)
def test_any_config_document_is_a_config_or_a_clear_error(data: dict[str, Any]) -> None:
    try:
        parse_config(data, source=Path("/tmp/fuzz/memindex.toml"))
    except ConfigError as exc:
        assert exc.message and "memindex.toml" in exc.message


# -- socket ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    root = tmp_path_factory.mktemp("fuzzd")
    ws = root / "ws"
    write(ws, "MEMORY.md", "# Memory\n- Dana likes rye bread.\n")
    (root / "sessions").mkdir()
    cfg = daemon_config(root, ws, root / "sessions", extra="[server]\nmaxRequestBytes = 65536\n")
    env = child_env()
    env["XDG_STATE_HOME"] = str(root / "state")
    d = DaemonProc(cfg, root / "run" / "mi.sock", env).start()
    yield d
    out = d.stop()
    assert "Traceback" not in out, out[-3000:]


def _send(
    sock_path: Path, payload: bytes, *, chunked: bool = False, close_early: bool = False
) -> bytes:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(sock_path))
    try:
        if chunked:  # a slow client: the frame arrives in small pieces
            for i in range(0, len(payload), 7):
                s.sendall(payload[i : i + 7])
                time.sleep(0.001)
        else:
            s.sendall(payload)
        if close_early:  # a partial frame, then the client goes away
            return b""
        s.shutdown(socket.SHUT_WR)
        buf = b""
        while chunk := s.recv(65536):
            buf += chunk
        return buf
    finally:
        s.close()


methods = st.sampled_from(["memory_search", "memory_get", "status", "reindex", "ping", "nope", ""])
requests = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]) | json_values, "method": methods | json_values},
    optional={
        "id": st.integers(min_value=-(10**40), max_value=10**40) | json_values,
        "params": st.fixed_dictionaries(
            {},
            optional={
                "query": json_values | st.text(max_size=200),
                "path": json_values
                | st.sampled_from(["../x.md", "/etc/passwd", "MEMORY.md\x00", "%2e%2e/a.md"]),
                "maxResults": json_values,
                "minScore": json_values,
                "from": json_values,
                "lines": json_values,
                "sources": json_values,
                "agent": json_values,
                "gate": json_values,
                "force": st.just(False),
            },
        )
        | json_values,
    },
)


def _frames() -> st.SearchStrategy[bytes]:
    encoded = requests.map(lambda r: json.dumps(r).encode())
    return st.one_of(
        encoded,
        st.binary(max_size=300),  # includes invalid UTF-8
        encoded.map(lambda b: b[: max(1, len(b) // 2)]),  # cut mid-frame
        st.integers(min_value=1, max_value=3000).map(lambda n: b"[" * n + b"]" * n),  # deep nesting
        st.integers(min_value=1, max_value=400).map(
            lambda n: (
                b'{"jsonrpc":"2.0","id":1,"method":"memory_search","params":{"query":"a","maxResults":1'
                + b"0" * n
                + b"}}"
            )
        ),
        st.lists(encoded, min_size=2, max_size=4).map(lambda rs: b"[" + b",".join(rs) + b"]"),
    )


@FAST
@given(_frames(), st.booleans(), st.booleans())
def test_socket_survives_any_frame(
    fuzz_daemon: DaemonProc, frame: bytes, chunked: bool, close_early: bool
) -> None:
    reply = _send(
        fuzz_daemon.sock,
        frame.replace(b"\n", b" ") + b"\n",
        chunked=chunked,
        close_early=close_early,
    )
    for line in reply.splitlines():
        if line.strip():
            msg = json.loads(line)  # every answer is well-formed JSON-RPC
            items = msg if isinstance(msg, list) else [msg]
            for m in items:
                assert m["jsonrpc"] == "2.0" and ("result" in m or "error" in m)
    assert rpc(fuzz_daemon.sock, "ping")["ok"] is True


def test_oversized_and_endless_frames(fuzz_daemon: DaemonProc) -> None:
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 200_000 + b'"}}\n'
    (err,) = [json.loads(x) for x in _send(fuzz_daemon.sock, big).splitlines()]
    assert err["error"]["code"] < 0
    _send(fuzz_daemon.sock, b"x" * 300_000, close_early=True)  # never a newline
    assert rpc(fuzz_daemon.sock, "ping")["ok"] is True
