"""The audit through the daemon: the entries past MEMORY.md's bootstrap cap come most
recalled first, counted from the agent's searches (the daemon's), kept across a
restart beside the index; the audit's own questions are not counted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import Runner, write
from daemon_util import DaemonProc, child_env, daemon_config, rpc

pytestmark = pytest.mark.slow


def _memory(n: int) -> str:
    return "# Memory\n\n" + "".join(
        f"- Fact {k}: the storage unit code for shelf {k} is SHELF-{k:04d}.\n" for k in range(n)
    )


def test_cut_entries_come_most_recalled_first(tmp_path: Path, cli: Runner) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", _memory(400))
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    conf = daemon_config(tmp_path, ws, sessions)
    d = DaemonProc(conf, tmp_path / "run" / "mi.sock", child_env()).start()
    try:
        for query, times in (("SHELF-0250", 3), ("SHELF-0260", 1)):
            for _ in range(times):
                hits = rpc(d.sock, "memory_search", {"query": query})["results"]
                assert hits[0]["path"] == "MEMORY.md" and query in hits[0]["snippet"]
        got = rpc(d.sock, "memory_audit", {"kinds": ["bootstrap", "unfindable"]})
        cut = [f for f in got["findings"] if f["kind"] == "bootstrap" and "snippet" in f]
        assert [f.get("recalled") for f in cut[:3]] == [3, 1, None]
        assert "SHELF-0250" in cut[0]["snippet"] and "SHELF-0260" in cut[1]["snippet"]
        assert [f["startLine"] for f in cut[2:]] == sorted(f["startLine"] for f in cut[2:])
        again = rpc(d.sock, "memory_audit", {"kinds": ["bootstrap"]})  # its probes: not counted
        assert [f.get("recalled") for f in again["findings"][1:4]] == [3, 1, None]
    finally:
        d.stop()
    # written beside the index when the daemon stopped; read by a one-shot audit
    kept = Path(os.environ["XDG_STATE_HOME"]) / "memindex" / "main.recalls.json"
    assert kept.stat().st_mode & 0o777 == 0o600
    assert sorted(json.loads(kept.read_text())["lines"].values())[-2:] == [1, 3]
    code, out, err = cli("--config", str(conf), "audit", "--json", "--kind", "bootstrap")
    assert code == 0, err
    cut = [f for f in json.loads(out)["findings"] if "snippet" in f]
    assert [f.get("recalled") for f in cut[:2]] == [3, 1]
