"""Secrets in transcripts never reach the index (not even its raw bytes), the answers
or the logs. (Path traversal: test_get.py; other uids: test_daemon.py; agents:
test_agents_watcher.py.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import write
from daemon_util import DaemonProc, child_env, daemon_config, rpc, wait_for

pytestmark = pytest.mark.slow

SECRETS = [
    "sk-proj-abcdefghijklmnop1234",
    "hunter2pass",
    "swordfish",
    "ghp_" + "a" * 30,
    "abcdef123456789xyz",
]


def test_transcript_secrets_stay_out_of_index_answers_and_logs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n- nothing secret\n")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    lines = [
        {
            "type": "message",
            "role": "user",
            "content": "deploy key sk-proj-abcdefghijklmnop1234 ok?",
        },
        {
            "type": "message",
            "role": "assistant",
            "content": "use https://bob:hunter2pass@example.com and password=swordfish",
        },
        {
            "type": "message",
            "role": "user",
            "content": "token ghp_" + "a" * 30 + " for the ocelot repo",
        },
        {"type": "message", "role": "user", "content": "Authorization: Bearer abcdef123456789xyz"},
    ]
    (sessions / "s1.jsonl").write_text("".join(json.dumps(m) + "\n" for m in lines))
    cfg = daemon_config(tmp_path, ws, sessions, "idleFlushMs = 0\ndeltaMessages = 1\n")
    d = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env()).start()
    try:
        hit = wait_for(
            lambda: rpc(d.sock, "memory_search", {"query": "ocelot repo", "minScore": 0})["results"]
        )
        assert hit[0]["path"] == "sessions/s1.jsonl"
        answers = json.dumps(
            [
                rpc(d.sock, "memory_search", {"query": s, "minScore": 0})
                for s in SECRETS + ["deploy key", "password"]
            ]
            + [rpc(d.sock, "memory_get", {"path": "sessions/s1.jsonl"})]
            + [rpc(d.sock, "status")]
        )
        index = Path(rpc(d.sock, "status")["indexPath"])
    finally:
        log = d.stop()
    for s in SECRETS:
        assert s not in answers, s
        assert s not in log, s
    assert "[REDACTED" in answers or "redacted" in answers.lower()
    # Not in the database file, its WAL or anything else the index wrote.
    for f in index.resolve().parent.iterdir():
        if f.is_file():
            raw = f.read_bytes()
            for s in SECRETS:
                assert s.encode() not in raw, (f.name, s)
    assert os.stat(index.resolve()).st_size > 0
