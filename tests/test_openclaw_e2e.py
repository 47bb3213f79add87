"""An agent's memory with memindex in the real OpenClaw 2026.9.6, as a user lives it:
the gateway runs turns against a scripted model (tests/scripted_model.py, OpenClaw's
custom OpenAI-compatible provider on 127.0.0.1), and the model uses its memory tools.

With memindex in the memory slot (set up by ``memindex openclaw install`` from the
plugin's ``npm pack`` tarball; dreaming off, so no memory-core is loaded and nothing
of it can stand in for memindex):

* the model's ``memory_search`` gets memindex's hits;
* a fact said in one turn is found by ``memory_search`` in a later one: the
  transcript is read from OpenClaw's agent database within seconds;
* a session that grows past ``forceFlushTranscriptBytes`` gets the pre-compaction
  memory flush (memindex's flush plan), and memindex finds what the flush wrote.

Then the same turns with OpenClaw's memory-core in the slot, the baseline: everything
it finds, memindex found too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_util import rpc, search_paths, wait_for
from openclaw_home import PLUGIN, Home, require_openclaw
from scripted_model import ScriptedModel

require_openclaw()

FACT = "QUOKKA-7781"  # said in a turn: found later in the transcript
MEMORY_ID = "ZQX-48213-KAPPA"  # planted in MEMORY.md
FLUSHED = "FLUSH-MARKER-31337"  # written by the pre-compaction flush
QUERIES = {"transcript": FACT, "memory file": MEMORY_ID, "flushed note": FLUSHED}


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(
        f"# Memory\n\n- The incident ticket for the failed payment retries is {MEMORY_ID}.\n"
    )
    return ws


def _config(ws: Path, model: ScriptedModel) -> dict[str, Any]:
    scripted = {
        "baseUrl": model.base_url,
        "apiKey": "local-test",
        "api": "openai-completions",
        "models": [{"id": "agent", "name": "Scripted agent", "reasoning": False,
                    "input": ["text"], "contextWindow": 16000, "maxTokens": 1024,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
    }  # fmt: skip
    return {
        "agents": {
            "defaults": {
                "model": {"primary": "scripted/agent"},
                "skipBootstrap": True,
                # the flush once the session's transcript passes 2 KB
                "compaction": {"memoryFlush": {"forceFlushTranscriptBytes": 2048}},
            },
            "list": [{"id": "main", "default": True, "workspace": str(ws)}],
        },
        "models": {"mode": "merge", "providers": {"scripted": scripted}},
        # the memory tools offered directly (not behind tool search), the flush's write
        "tools": {"toolSearch": False, "allow": ["read", "write", "memory_search", "memory_get"]},
        "memory": {"search": {"sources": ["memory", "sessions"]}},
        "plugins": {"allow": ["memindex", "memory-core"]},
    }


def _turn(home: Home, message: str, session: str = "e2e") -> str:
    r = home.openclaw(
        "agent", "--agent", "main", "--session-key", session, "--message", message, "--json"
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:] + home.log_tail()
    lines = r.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("{"))
    out = json.loads("\n".join(lines[start:]))
    payloads = (out.get("result") or out).get("payloads") or []
    return "\n".join(str(p.get("text", "")) for p in payloads)


def _flush_file(ws: Path) -> Path | None:
    for f in sorted((ws / "memory").glob("*.md")):
        if FLUSHED in f.read_text(errors="replace"):
            return f
    return None


def _live(home: Home, model: ScriptedModel) -> dict[str, str]:
    """The same conversation for either engine; what the model got back for each
    of QUERIES (the text of its memory_search result)."""
    ws = Path(home.config()["agents"]["list"][0]["workspace"])
    assert "Noted" in _turn(home, f"The vault code word is {FACT}. Please keep it in mind.")
    got: dict[str, str] = {}
    wait = getattr(home, "wait_transcript", None)
    if wait is not None:
        wait()
    got["transcript"] = _turn(home, f"recall {FACT}")
    got["memory file"] = _turn(home, f"recall {MEMORY_ID}")
    # a long turn: the transcript passes forceFlushTranscriptBytes; the flush runs
    # after the reply (the gateway's post-turn work)
    _turn(home, "Here are my garden notes: " + "tomatoes, beans and marigolds. " * 80)
    wait_for(lambda: _flush_file(ws) is not None, timeout=120, interval=0.5)
    flushes = [r for r in model.requests if "Pre-compaction memory flush" in json.dumps(r)]
    assert flushes, "no flush turn reached the model"
    index_wait = getattr(home, "wait_flushed", None)
    if index_wait is not None:
        index_wait()
    got["flushed note"] = _turn(home, f"recall {FLUSHED}")
    return got


@pytest.fixture(scope="module")
def memindex_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = Home(tmp_path_factory.mktemp("e2e-memindex"))
    model = ScriptedModel().start()
    ws = _workspace(home.root)
    home.write_config(_config(ws, model))
    try:
        # the plugin as npm packs it (what a registry would serve), installed from the tarball
        pack = subprocess.run(
            ["npm", "pack", "--json", "--pack-destination", str(home.root)],
            cwd=PLUGIN, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert pack.returncode == 0, pack.stderr
        packed = json.loads(pack.stdout)[0]
        files = {f["path"] for f in packed["files"]}
        assert {"index.js", "openclaw.plugin.json", "src/flush.js", "package.json"} <= files
        assert not any(f.startswith(("test/", "scripts/")) for f in files), files
        tarball = home.root / packed["filename"]
        conf = str(home.state / "openclaw.json")
        r = home.memindex("--openclaw-config", conf, "openclaw", "install", "--no-dreaming",
                          "--plugin", str(tarball), "--json")  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        installed = json.loads(r.stdout)
        home.start_gateway()

        def transcript_indexed() -> None:  # debounce (1.5 s) + a moment, or it is a bug
            wait_for(lambda: search_paths(home.socket, FACT, sources=["sessions"]), timeout=15)

        def flushed_indexed() -> None:
            wait_for(lambda: search_paths(home.socket, FLUSHED), timeout=15)

        home.wait_transcript = transcript_indexed  # type: ignore[attr-defined]
        home.wait_flushed = flushed_indexed  # type: ignore[attr-defined]
        answers = _live(home, model)
        yield {"home": home, "model": model, "installed": installed, "answers": answers, "ws": ws}
    finally:
        home.close()
        model.stop()


def test_install_put_memindex_in_the_slot_without_memory_core(memindex_run: dict[str, Any]) -> None:
    home: Home = memindex_run["home"]
    cfg = home.config()
    assert cfg["plugins"]["slots"]["memory"] == "memindex"
    assert cfg["plugins"]["entries"]["memindex"]["config"]["dreaming"] == {"enabled": False}
    assert memindex_run["installed"]["check"]["results"] >= 1
    assert "memory plugin not selected" not in home.log_tail(200_000)  # no memory-core beside


def test_the_model_gets_memindex_hits(memindex_run: dict[str, Any]) -> None:
    answers = memindex_run["answers"]
    assert '"engine": "memindex"' in answers["memory file"]
    assert MEMORY_ID in answers["memory file"] and "MEMORY.md" in answers["memory file"]
    model: ScriptedModel = memindex_run["model"]
    assert ("memory_search", {"query": MEMORY_ID}) in model.tool_calls


def test_a_fact_from_an_earlier_turn_is_found_in_the_transcript(
    memindex_run: dict[str, Any],
) -> None:
    text = memindex_run["answers"]["transcript"]
    assert FACT in text and '"source": "sessions"' in text and "sessions/main/" in text, text
    home: Home = memindex_run["home"]
    # The turn that said it is among the hits (once the later "recall" turn is
    # indexed, that one, quoting FACT in its tool output, may rank first), and its
    # citation reads back as the user's line.
    hits = rpc(home.socket, "memory_search", {"query": FACT, "sources": ["sessions"]})["results"]
    said = [h for h in hits if "vault code word" in h["snippet"]]
    assert said, hits
    hit = said[0]
    got = rpc(home.socket, "memory_get", {"path": hit["path"], "from": hit["snippetStartLine"]})
    assert got["text"].startswith("User: ") and FACT in got["text"].splitlines()[0], got


def test_the_pre_compaction_flush_runs_and_its_note_is_found(memindex_run: dict[str, Any]) -> None:
    ws: Path = memindex_run["ws"]
    flushed = _flush_file(ws)
    assert flushed is not None and flushed.name[:4].isdigit()
    text = memindex_run["answers"]["flushed note"]
    assert FLUSHED in text and f"memory/{flushed.name}" in text, text


def test_memory_core_finds_nothing_memindex_does_not(
    memindex_run: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The baseline: OpenClaw's own memory-core in the slot, the same conversation."""
    home = Home(tmp_path_factory.mktemp("e2e-memory-core"))
    model = ScriptedModel().start()
    ws = _workspace(home.root)
    home.write_config(_config(ws, model))
    try:
        home.start_gateway()
        core = _live(home, model)
    finally:
        home.close()
        model.stop()
        shutil.rmtree(home.root / "xdg-cache", ignore_errors=True)
    found_by_core = {k for k, q in QUERIES.items() if q in _results_text(core[k])}
    found_by_memindex = {
        k for k, q in QUERIES.items() if q in _results_text(memindex_run["answers"][k])
    }
    print(f"memory-core found {sorted(found_by_core)}; memindex {sorted(found_by_memindex)}")
    assert found_by_core <= found_by_memindex
    assert found_by_memindex == set(QUERIES)


def _results_text(answer: str) -> str:
    """The search results the model's reply quotes ("" when there were none)."""
    m = re.search(r'"results":\s*\[\s*\{', answer)
    return answer[m.start() :] if m else ""
