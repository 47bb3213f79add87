"""The OpenClaw plugin (integrations/openclaw) inside the real OpenClaw 2026.9.6, set up
the way a user does it: ``memindex openclaw install`` (the conversations themselves,
with a scripted model: tests/openclaw/test_openclaw_parity.py).

OpenClaw and Node 24 come from the npm registry through scripts/setup_openclaw.sh
(scripts/test.sh runs it; cached in ~/.cache/memindex/openclaw). Nothing of OpenClaw
is stubbed: its doctor (which imports legacy JSONL transcripts into the agent
database), plugin installer and loader, memory slot, dreaming sidecar, CLI and
gateway run, and the gateway's /tools/invoke endpoint drives the agent's
memory_search / memory_get through its tool policy. Each OpenClaw CLI call costs
3-20 s here, so one OpenClaw home is shared by the tests of this module, which run
in order.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator

import pytest
from daemon_util import wait_for
from openclaw_home import MEMINDEX, NODE, PLUGIN, Home, require_openclaw

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

require_openclaw()

MEMORY_ID = "ZQX-48213-KAPPA"
SESSION_ID = "QUOKKA-7781"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    h = Home(tmp_path_factory.mktemp("oc"))
    ws, ws2 = h.root / "ws", h.root / "ws2"
    (ws / "memory").mkdir(parents=True)
    (ws2 / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(
        "# Memory\n\n- The user prefers tea over coffee.\n- Router admin password is Hunter2Blue\n"
    )
    (ws / "memory/2026-11-20.md").write_text(
        "# 2026-11-20\n\nMorning standup notes.\n\nDeployed the billing service.\n"
        f"The incident ticket is {MEMORY_ID} for the failed payment retries.\n"
        "Follow up with Dana next week.\n"
    )
    (ws2 / "MEMORY.md").write_text("# Memory\n\n- Another agent's notes about the incident.\n")
    h.write_config(
        {
            "agents": {
                "list": [
                    {"id": "main", "default": True, "workspace": str(ws)},
                    {"id": "other", "workspace": str(ws2)},
                ]
            },
            "memory": {"search": {"sources": ["memory", "sessions"]}},
        }
    )
    try:
        yield h
    finally:
        h.close()


def test_1_doctor_imports_a_legacy_transcript_that_memindex_then_finds(home: Home) -> None:
    """The issue's repro: a JSONL transcript, `openclaw doctor --fix` moves it into
    the agent database (2026.9), and memindex finds it in the sessions source."""
    sessions = home.state / "agents/main/sessions"
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-20T10:00:00.000Z",
         "cwd": "/tmp"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-11-20T10:00:01.000Z",
         "message": {"role": "user", "content": [
             {"type": "text", "text": f"The vault code word is {SESSION_ID}."}]}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-11-20T10:00:03.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "text", "text": "Got it, I will remember the vault code word."}]}},
    ]  # fmt: skip
    (sessions / "s1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (sessions / "sessions.json").write_text(
        json.dumps({"agent:main:main": {"sessionId": "s1", "updatedAt": 1795600000000}})
    )
    r = home.openclaw("doctor", "--fix", "--non-interactive", timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert not (sessions / "s1.jsonl").exists()  # moved into the database
    assert (home.state / "agents/main/agent/openclaw-agent.sqlite").is_file()
    conf = str(home.state / "openclaw.json")
    r = home.memindex("--openclaw-config", conf, "index")
    assert r.returncode == 0, r.stderr
    r = home.memindex("--openclaw-config", conf, "search", SESSION_ID, "--json")
    hits = json.loads(r.stdout)["results"]
    assert hits and hits[0]["path"] == "sessions/main/s1.jsonl" and hits[0]["source"] == "sessions"
    assert hits[0]["startLine"] == 2  # seq 1: the legacy file's line 2
    r = home.memindex("--openclaw-config", conf, "get", "sessions/main/s1.jsonl", "--from", "2")
    assert r.stdout.startswith(f"User: The vault code word is {SESSION_ID}."), r.stdout
    st = json.loads(home.memindex("--openclaw-config", conf, "status", "--json").stdout)
    assert st["sources"]["sessions"]["files"] == 1


def test_2_install_puts_memindex_in_the_slot_and_keeps_dreaming(home: Home) -> None:
    r = home.memindex("--openclaw-config", str(home.state / "openclaw.json"), "openclaw", "install")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "memindex is OpenClaw's memory engine now" in r.stdout
    checked = re.search(r"check: agent main: 3 files, \d+ chunks; a search found [1-9]", r.stdout)
    assert checked, r.stdout
    cfg = home.config()
    assert cfg["plugins"]["slots"]["memory"] == "memindex"
    entry = cfg["plugins"]["entries"]["memindex"]
    assert entry["enabled"] is True
    install = entry["config"].pop("install")  # what install changed, for uninstall
    assert install["addedDeny"] is True and install["daemon"]["started"] is True
    assert entry["config"] == {"command": [str(MEMINDEX)], "dreaming": {"enabled": True}}
    # OpenClaw lets a plugin it does not bundle read the conversation only with this
    assert entry["hooks"] == {"allowConversationAccess": True}
    assert cfg["tools"]["deny"] == ["memory-core"]
    assert (home.state / "extensions/memindex/openclaw.plugin.json").is_file()
    assert home.daemon_pid()  # started by install, kept for the gateway


def test_3_memory_status_and_search_through_openclaw(home: Home) -> None:
    # dreaming keeps memory-core loaded, which owns `openclaw memory`: its status and
    # search are memindex's (they report on the index the agent searches)
    rows = {row["agentId"]: row["status"] for row in home.json("memory", "status", "--json")}
    assert set(rows) == {"main", "other"}
    main = rows["main"]
    assert main["custom"]["engine"] == "memindex" and main["provider"].startswith("memindex/")
    counts = {c["source"]: c for c in main["sourceCounts"]}
    assert counts["memory"]["files"] == 2 and counts["sessions"]["files"] == 1
    assert main["workspaceDir"] == str(home.root / "ws")
    assert rows["other"]["workspaceDir"] == str(home.root / "ws2")
    res = home.json("memory", "search", MEMORY_ID, "--json")
    hit = res["results"][0]
    assert hit["path"] == "memory/2026-11-20.md" and hit["source"] == "memory"
    assert hit["startLine"] <= 6 <= hit["endLine"]
    assert hit["citation"] == f"memory/2026-11-20.md#L{hit['startLine']}-L{hit['endLine']}"
    assert MEMORY_ID in hit["snippet"] and res["engine"] == "memindex"
    # which of OpenClaw's memory features memindex serves, and which nobody does
    # (the human lines: integrations/openclaw/test/plugin.test.js)
    served = {f["id"]: f["servedBy"] for f in main["custom"]["features"]}
    assert served["forget"] == "memory-core" and served["curated-core"] == "memindex"
    conf = str(home.state / "openclaw.json")
    doctor = home.memindex("--openclaw-config", conf, "doctor", "--json")
    check = next(c for c in json.loads(doctor.stdout) if c["check"] == "openclaw")
    assert check["ok"] and "dreaming on" in check["detail"], check
    lines = dict(ln.split(": ", 1) for ln in check["detail"].splitlines()[1:])
    assert "MEMORY.md and USER.md in context" in lines["served by memindex"]
    assert lines["served by memory-core"].startswith("openclaw memory forget")
    assert "Trigger injection" in lines["served by memindex"]
    assert "served by nobody" not in lines  # with dreaming on, every row is served


def test_4_the_gateway_hands_the_tools_to_memindex_and_runs_dreaming(home: Home) -> None:
    home.start_gateway()
    # dreaming on: memory-core is loaded beside memindex for it, but its tools are denied
    # (the gateway logs its plugins while it starts, after its HTTP server answers)
    wanted = ("plugin=memory-core", "consolidation lifecycle preserved")
    wait_for(lambda: all(w in home.log_tail(200_000) for w in wanted), timeout=60)
    log = home.log_tail(200_000)
    assert "plugin tool name conflict" not in log
    jobs = home.json("cron", "list", "--json")["jobs"]
    assert any(j.get("declarationKey") == "memory-core:memory-dreaming-promotion" for j in jobs)
    res = home.invoke("memory_search", {"query": MEMORY_ID}, agent="main")
    assert res["engine"] == "memindex"
    hit = res["results"][0]
    assert hit["path"] == "memory/2026-11-20.md" and hit["startLine"] <= 6 <= hit["endLine"]
    got = home.invoke(
        "memory_get",
        {
            "path": hit["path"],
            "from": hit["startLine"],
            "lines": hit["endLine"] - hit["startLine"] + 1,
        },  # fmt: skip
        agent="main",
    )
    assert got["status"] == "ok" and MEMORY_ID in got["text"]
    assert got["text"].splitlines()[6 - hit["startLine"]].endswith("failed payment retries.")
    snake = home.invoke("memory_search", {"query": MEMORY_ID, "max_results": 1}, agent="main")
    assert len(snake["results"]) == 1 and snake["engine"] == "memindex"
    missing = home.invoke("memory_get", {"path": "memory/1999-01-01.md"}, agent="main")
    assert missing["status"] == "not_found"
    refused = home.invoke("memory_get", {"path": "../state/openclaw.json"}, agent="main")
    assert refused["status"] == "error" and refused["error"]


def test_5_a_transcript_hit_reaches_its_own_agent_only(home: Home) -> None:
    own = home.invoke("memory_search", {"query": SESSION_ID}, agent="main")
    hits = [h for h in own["results"] if h["source"] == "sessions"]
    assert hits and hits[0]["path"] == "sessions/main/s1.jsonl" and SESSION_ID in hits[0]["snippet"]
    got = home.invoke("memory_get", {"path": hits[0]["path"], "from": 2, "lines": 2}, agent="main")
    assert got["status"] == "ok" and got["text"].startswith("User: The vault code word")
    other = home.invoke("memory_search", {"query": SESSION_ID}, agent="other")
    assert other["results"] == []
    memory_only = home.invoke(
        "memory_search", {"query": SESSION_ID, "corpus": "memory"}, agent="main"
    )
    assert memory_only["results"] == []


def test_6_a_stopped_daemon_is_started_again(home: Home) -> None:
    home.stop_daemon()
    assert home.daemon_pid() is None
    t0 = time.monotonic()
    res = home.json("memindex", "search", MEMORY_ID, "--json")
    assert res["results"][0]["path"] == "memory/2026-11-20.md"
    assert home.daemon_pid()
    # and the gateway's tool path finds the new daemon too
    res = home.invoke("memory_search", {"query": MEMORY_ID}, agent="main")
    assert res["results"][0]["path"] == "memory/2026-11-20.md"
    print(f"search with a daemon start: {time.monotonic() - t0:.1f} s")


def test_6b_forget_without_dreaming(home: Home) -> None:
    """With dreaming off no memory-core is loaded: `openclaw memory forget` is
    memindex's, records the session where memory-core would, and memindex drops it."""
    r = home.openclaw("config", "set", "plugins.entries.memindex.config.dreaming.enabled", "false")
    assert r.returncode == 0, r.stdout + r.stderr
    conf = str(home.state / "openclaw.json")
    before = json.loads(home.memindex("--openclaw-config", conf, "search", SESSION_ID,
                                      "--source", "sessions", "--json").stdout)  # fmt: skip
    assert before["results"], before
    got = home.json("memory", "forget", "--agent", "main", "--session", "agent:main:main", "--json")
    assert got["engine"] == "memindex" and got["sessionIds"] == ["s1"] and got["reindexed"]
    after = json.loads(home.memindex("--openclaw-config", conf, "search", SESSION_ID,
                                     "--source", "sessions", "--json").stdout)  # fmt: skip
    assert after["results"] == []
    status = home.json("memindex", "status", "--json")
    served = {f["id"]: f["servedBy"] for f in status[0]["status"]["custom"]["features"]}
    assert served["forget"] == "memindex" and served["dreaming"] == "nobody"
    assert served["curated-core"] == "memindex" and served["triggers"] == "memindex"


def test_6c_audit_through_openclaw_is_the_clis(home: Home) -> None:
    """`openclaw memindex audit` answers what `memindex audit` answers (the planted
    router password among the findings, never printed)."""
    conf = str(home.state / "openclaw.json")
    mine = json.loads(home.memindex("--openclaw-config", conf, "audit", "--json").stdout)
    got = home.json("memindex", "audit", "--json")
    assert got["findings"] == mine["findings"] and got["counts"] == mine["counts"]
    secret = [f for f in got["findings"] if f["kind"] == "secrets"]
    assert [(f["path"], f["startLine"]) for f in secret] == [("MEMORY.md", 4)]
    assert "Hunter2Blue" not in json.dumps(got)
    human = home.openclaw("memindex", "audit")
    assert human.returncode == 0 and "[secrets] MEMORY.md:4" in human.stdout, human.stdout


def test_7_memindex_missing_fails_fast_naming_memindex(home: Home) -> None:
    home.stop_daemon()
    r = home.openclaw(
        "config", "set", "plugins.entries.memindex.config.command", "/nonexistent/memindex"
    )
    assert r.returncode == 0, r.stdout + r.stderr
    t0 = time.monotonic()
    r = home.openclaw("memindex", "status")
    took = time.monotonic() - t0
    assert r.returncode == 1
    assert "memindex is not installed" in r.stdout and "/nonexistent/memindex" in r.stdout
    wait_for(lambda: "/nonexistent" in json.dumps(home.config()), timeout=5)

    def refused() -> bool:  # once the gateway has hot-reloaded the config
        res = home.invoke("memory_search", {"query": MEMORY_ID}, agent="main")
        return res["results"] == [] and "memindex is not installed" in (res.get("error") or "")

    wait_for(refused, timeout=30)
    print(f"memindex status without memindex: {took:.1f} s (OpenClaw's own start included)")


def test_8_uninstall_gives_the_slot_back_to_memory_core(home: Home) -> None:
    home.stop_gateway()
    r = home.memindex(
        "--openclaw-config", str(home.state / "openclaw.json"), "openclaw", "uninstall"
    )
    assert r.returncode == 0, r.stdout + r.stderr
    cfg = home.config()
    assert cfg["plugins"]["slots"]["memory"] == "memory-core"
    assert "memory-core" not in json.dumps(cfg.get("tools", {}))
    assert not (home.state / "extensions/memindex").exists()
    r = home.openclaw("memory", "status")
    assert r.returncode == 0 and "Memory engine: memindex" not in r.stdout, r.stdout[-2000:]
    assert "Memory Search" in r.stdout  # memory-core's own status


def test_0_plugin_unit_tests_under_node() -> None:
    """integrations/openclaw/test: timeouts, a missing memindex, hit authorization,
    the flush plan, agent ids."""
    r = subprocess.run(
        [str(NODE), "--test", "--test-reporter=tap"],
        cwd=PLUGIN,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    passed = re.search(r"^# pass (\d+)$", r.stdout, re.M)
    assert "# fail 0" in r.stdout and passed and int(passed.group(1)) >= 11, r.stdout[-2000:]


def test_0_flush_plan_equals_memory_cores() -> None:
    """memindex's flush plan against memory-core's own resolver, loaded from the
    installed OpenClaw (integrations/openclaw/scripts/flush-parity.mjs)."""
    from openclaw_home import OPENCLAW

    core = OPENCLAW.parent / "dist/extensions/memory-core/index.js"
    for tz in ("UTC", "America/New_York"):  # the host's zone is the default user zone
        r = subprocess.run(
            [str(NODE), "scripts/flush-parity.mjs", str(core)],
            cwd=PLUGIN,
            capture_output=True,
            text=True,
            timeout=60,
            env={"TZ": tz, "PATH": "/usr/bin:/bin"},
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().endswith("9/9 equal"), r.stdout
