"""``memindex audit`` (memory_audit): each finding kind with a planted case and its
near misses; a healthy workspace audits clean; the audit changes no file."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import Runner, cli_json, write

from indexer.search.audit.bootstrap import Caps, hidden_span
from indexer.search.audit.secrets import is_placeholder
from indexer.sources.redaction import find_secrets, redact

HEALTHY_MEMORY = """# Memory

## Work
- Team standup is at 09:30 on weekdays, in the blue room.
- The staging server is stage-2.internal; deploy with make deploy.
- Passport renewal is due 2027-03-01.

## People
- Dana's birthday is 4 March.
- Dana's phone number is 555-0101.
- Dana likes rye bread from the corner bakery.
- Priya lives in Lisbon and works on the billing service.
- Priya's piano lesson is at 17:00 on Fridays, in Lisbon.
"""

HEALTHY_LOGS = {
    # a later date and the word "now", no value of the entry changed
    "memory/2026-11-20.md": "# 2026-11-20\n\n- Booked the passport photo; renewal is now "
    "confirmed, still due 2027-03-01.\n- Standup ran long today, we talked until 10:40.\n",
    # "new" with a value of another kind than the entry's (money, not a time)
    "memory/2026-11-21.md": "# 2026-11-21\n\n- The new standup snacks cost €12 a week.\n"
    "- Dana sent a photo of the rye loaf she baked.\n"
    # the same person, another subject
    "- Priya's dentist moved to 16:30 from now on.\n",
    # one shared word, another subject: a new phone for the office, not Dana's
    "memory/2026-11-22.md": "# 2026-11-22\n\n- The office has a new phone number now: "
    "555-0199.\n- AWS docs example key AKIAIOSFODNN7EXAMPLE in the tutorial.\n"
    "- Test card 4242 4242 4242 4242 for the shop's sandbox; api_key=<your-api-key>\n"
    "- export OPENAI_API_KEY=$OPENAI_API_KEY in the shell profile.\n",
}


def _audit(cli: Runner, ws: Path, *kinds: str) -> dict[str, Any]:
    assert cli("--workspace", str(ws), "index")[0] == 0
    args = [a for k in kinds for a in ("--kind", k)]
    out: dict[str, Any] = cli_json(cli, "--workspace", str(ws), "audit", "--json", *args)
    return out


def _where(found: dict[str, Any], kind: str) -> list[tuple[str, int]]:
    return [(f["path"], f["startLine"]) for f in found["findings"] if f["kind"] == kind]


@pytest.fixture
def healthy(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", HEALTHY_MEMORY)
    write(ws, "USER.md", "# User\n\n- Prefers short answers.\n- Time zone: Europe/Lisbon.\n")
    for rel, text in HEALTHY_LOGS.items():
        write(ws, rel, text)
    return ws


def test_a_healthy_workspace_audits_clean_and_unchanged(cli: Runner, healthy: Path) -> None:
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in healthy.rglob("*.md")}
    found = _audit(cli, healthy)
    assert found["findings"] == [], json.dumps(found["findings"], indent=1)
    assert set(found["counts"]) == {
        "secrets", "stale", "conflicts", "bootstrap", "duplicates", "unfindable"
    }  # fmt: skip
    assert found["checked"]["entries"] == 10 and found["checked"]["asked"] == 10
    assert found["caps"] == {"MEMORY.md": 20_000, "USER.md": 4_000, "total": 60_000}
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in healthy.rglob("*.md")}
    assert after == before
    code, out, _ = cli("--workspace", str(healthy), "audit")
    assert code == 0 and "0 findings" in out and "nothing to fix" in out


def test_stale_names_the_later_note_and_its_value(cli: Runner, healthy: Path) -> None:
    write(
        healthy, "memory/2026-11-24.md", "# 2026-11-24\n\n- Standup moved to 10:15 from now on.\n"
    )
    write(
        healthy,
        "memory/2026-11-26.md",
        "# 2026-11-26\n\n- Standup moves again, from 10:15 to 10:45, starting Monday.\n",
    )
    write(healthy, "memory/2026-11-27.md", "# 2026-11-27\n\n- Priya's piano lesson moved to "
          "18:00 from now on.\n")  # fmt: skip
    found = _audit(cli, healthy, "stale")
    assert _where(found, "stale") == [("MEMORY.md", 4), ("MEMORY.md", 13)]
    f = found["findings"][0]
    assert f["newer"] == "10:45" and f["other"] == "memory/2026-11-26.md#L3-L3"
    assert "2026-11-26" in f["message"] and "10:45" in f["suggestion"]
    # the entry brought up to date: nothing stale
    write(healthy, "MEMORY.md", HEALTHY_MEMORY.replace("09:30", "10:45").replace("17:00", "18:00"))
    assert _audit(cli, healthy, "stale")["findings"] == []


def test_duplicates_and_conflicts_but_not_two_attributes(cli: Runner, healthy: Path) -> None:
    extra = (
        "- Dana really likes the rye bread from the corner bakery.\n"
        "- Office wifi password rotates every 90 days.\n"
        "- Office wifi password rotates every 60 days.\n"
    )
    write(healthy, "MEMORY.md", HEALTHY_MEMORY + extra)
    found = _audit(cli, healthy, "duplicates", "conflicts")
    assert _where(found, "duplicates") == [("MEMORY.md", 14)]
    assert _where(found, "conflicts") == [("MEMORY.md", 16)]
    conflict = next(f for f in found["findings"] if f["kind"] == "conflicts")
    assert conflict["other"] == "MEMORY.md#L15-L15" and "60" in conflict["message"]
    assert found["findings"][0]["kind"] == "conflicts"  # the more important kind first


def test_an_entry_crowded_out_is_unfindable(cli: Runner, healthy: Path) -> None:
    """Every word of the entry is in nine daily logs that say them more: its own
    question brings the logs first; an entry with words of its own is found."""
    entry = (
        "- Hendricks Heating boiler service autumn; today note garden gate, today note "
        "garden shed, today note garden path, today note garden fence.\n"
    )
    findable = "- The spare key is kept in the blue folder.\n"
    write(healthy, "MEMORY.md", HEALTHY_MEMORY + entry + findable)
    for day in range(1, 10):
        write(
            healthy,
            f"memory/2026-10-0{day}.md",
            f"# 2026-10-0{day}\n\n- Hendricks Heating boiler service: Hendricks Heating came "
            f"for the boiler service, autumn visit {day}.\n"
            "- Today note: garden gate, shed, path, fence.\n",
        )
    found = _audit(cli, healthy, "unfindable")
    assert _where(found, "unfindable") == [("MEMORY.md", 14)]
    words = set(found["findings"][0]["query"].split())
    assert len(words) == 4 and words <= set(re.findall(r"\w+", entry.lower()))


def test_secrets_are_named_never_shown(cli: Runner, healthy: Path) -> None:
    key = "sk-proj-Abc123def456ghi789jkl012mno"
    write(healthy, "memory/2026-11-25.md", f"# 2026-11-25\n\n- Set OPENAI_API_KEY={key} today.\n")
    write(healthy, "USER.md", "# User\n\n- Prefers short answers.\n- My bank PIN is 4921.\n")
    found = _audit(cli, healthy)
    assert sorted(_where(found, "secrets")) == [("USER.md", 4), ("memory/2026-11-25.md", 3)]
    assert key not in json.dumps(found) and "4921" not in json.dumps(found)
    code, out, _ = cli("--workspace", str(healthy), "audit")
    assert code == 0 and key not in out and "memory/2026-11-25.md:3" in out


def test_placeholders_and_documented_examples_are_not_secrets() -> None:
    for text in (
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "4242 4242 4242 4242",
        "<your-api-key>",
        "$OPENAI_API_KEY",
        "xxxxxxxxxxxxxxxx",
        "sk-...",
    ):
        assert is_placeholder(text), text
    for text in ("sk-proj-Abc123def456ghi789jkl012mno", "Hunter2Blue", "4921"):
        assert not is_placeholder(text), text


def test_find_secrets_finds_what_redact_removes() -> None:
    """The audit's finder and the transcripts' redaction agree, line by line, over
    the redaction test table."""
    from sources.test_redaction import SECRETS

    for _name, text, _secret in SECRETS:
        line = f"the value is {text} ok"
        assert find_secrets(line) and redact(line) != line, text
    for line in ("the password rotates every 90 days", "standup at 10:15", "token bucket"):
        assert not find_secrets(line) and redact(line) == line


def _ws_with_memory(tmp_path: Path, entries: int, user: str = "") -> Path:
    ws = tmp_path / "big"
    body = "".join(
        f"- Fact {n}: the storage unit code for shelf {n} is SHELF-{n:04d}.\n"
        for n in range(entries)
    )
    write(ws, "MEMORY.md", "# Memory\n\n" + body)
    if user:
        write(ws, "USER.md", user)
    return ws


def test_bootstrap_names_the_entries_cut_from_the_middle(cli: Runner, tmp_path: Path) -> None:
    ws = _ws_with_memory(tmp_path, 400)  # ~25,000 characters
    text = (ws / "MEMORY.md").read_text()
    assert len(text) > 20_000
    found = _audit(cli, ws, "bootstrap")
    notice, *cut = found["findings"]
    assert notice["path"] == "MEMORY.md" and "snippet" not in notice
    # OpenClaw keeps the head (75%) and the tail (25%): the middle is what is lost
    start, end = hidden_span("MEMORY.md", text, 20_000) or (0, 0)
    assert 14_000 < start < 15_000 and len(text.rstrip()) - end < 5_000
    first_cut = text[:start].count("\n") + 1
    assert notice["startLine"] == first_cut
    assert cut and all(f["kind"] == "bootstrap" and "snippet" in f for f in cut)
    lines = [f["startLine"] for f in cut]
    assert lines[0] <= first_cut + 1 and lines == sorted(lines)
    assert all(f"Fact {n - 3}:" in f["snippet"] for n, f in zip(lines, cut, strict=True))
    # the last lines are seen again (the tail)
    assert max(lines) < text.count("\n") - 50


def test_bootstrap_near_misses_and_openclaws_own_caps(
    cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _ws_with_memory(tmp_path, 300, user="# User\n\n" + "- I like tea.\n" * 10)
    assert len((ws / "MEMORY.md").read_text()) < 20_000
    assert _audit(cli, ws, "bootstrap")["findings"] == []
    # USER.md has its own 4,000-character cap
    write(
        ws,
        "USER.md",
        "# User\n\n" + "".join(f"- Preference {n}: tea, no sugar.\n" for n in range(160)),
    )
    found = _audit(cli, ws, "bootstrap")
    assert {f["path"] for f in found["findings"]} == {"USER.md"}
    # OpenClaw's config sets the cap: a 10,000-character one cuts MEMORY.md too
    state = tmp_path / "oc"
    write(
        state, "openclaw.json", json.dumps({"agents": {"defaults": {"bootstrapMaxChars": 10_000}}})
    )
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    found = _audit(cli, ws, "bootstrap")
    assert {f["path"] for f in found["findings"]} == {"USER.md", "MEMORY.md"}
    assert found["caps"]["MEMORY.md"] == 10_000


def test_hidden_span_fits_the_cap_as_openclaw_cuts() -> None:
    for size in (20_001, 25_000, 80_000):
        text = "x" * size
        start, end = hidden_span("MEMORY.md", text, 20_000) or (0, 0)
        kept = start + (size - end)
        assert 19_800 < kept < 20_000  # the marker takes the rest
        assert abs(start - 3 * (size - end)) <= 3  # head 75%, tail 25%
    assert hidden_span("MEMORY.md", "x" * 20_000 + "\n\n  ", 20_000) is None  # trimmed end
    # lengths are JavaScript's: an emoji is two units
    assert hidden_span("MEMORY.md", "😀" * 10_001, 20_000) is not None
    assert Caps(20_000, 3_000).of("USER.md") == 3_000


def test_the_mcp_tool_answers_the_clis_findings(cli: Runner, healthy: Path) -> None:
    import subprocess
    import sys

    write(
        healthy, "memory/2026-11-24.md", "# 2026-11-24\n\n- Standup moved to 10:15 from now on.\n"
    )
    mine = _audit(cli, healthy)
    assert mine["findings"]
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    call = {"name": "memory_audit", "arguments": {}}
    lines = [
        json.dumps(init),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "indexer.surfaces.cli", "--workspace", str(healthy), "mcp"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines()) if r.get("id")}
    got = replies[2]["result"]["structuredContent"]
    assert got["findings"] == mine["findings"]


def test_a_value_set_back_or_spelled_otherwise_is_not_stale(cli: Runner, healthy: Path) -> None:
    """The latest note on the fact decides: one that puts the old value back ("back to
    09:30 as before", "9:30 again") leaves the entry current (third outside attack)."""
    write(
        healthy, "memory/2026-11-24.md", "# 2026-11-24\n\n- Standup moved to 10:15 from now on.\n"
    )
    for back in ("Standup back to 09:30 as before.", "Standup at 9:30 again from now on."):
        write(healthy, "memory/2026-11-26.md", f"# 2026-11-26\n\n- {back}\n")
        assert _audit(cli, healthy, "stale")["findings"] == [], back


def test_numbered_things_are_not_conflicts(cli: Runner, healthy: Path) -> None:
    """Two places differ ("Flat 3 … 900", "Flat 4 … 950"): two things, not one fact
    twice; one place differs: a conflict (third outside attack: 777 false ones)."""
    extra = (
        "- Flat 3 rent is 900 EUR a month.\n- Flat 4 rent is 950 EUR a month.\n"
        "- Locker 101 code is 4411.\n- Locker 102 code is 9922.\n"
        "- The value of item1 is 5.\n- The value of item2 is 7.\n"
    )
    write(healthy, "MEMORY.md", HEALTHY_MEMORY + extra)
    assert _audit(cli, healthy, "conflicts", "duplicates")["findings"] == []


def test_the_files_before_memory_md_share_the_total(cli: Runner, tmp_path: Path) -> None:
    """OpenClaw injects AGENTS.md, SOUL.md, IDENTITY.md and USER.md before MEMORY.md,
    all within bootstrapTotalMaxChars: a long SOUL.md leaves MEMORY.md less."""
    ws = _ws_with_memory(tmp_path, 290)  # ~18,000 characters: under 20,000
    assert _audit(cli, ws, "bootstrap")["findings"] == []
    write(ws, "SOUL.md", "# Soul\n\n" + "Be kind and brief. " * 1400)  # ~25,000
    write(ws, "AGENTS.md", "# Agents\n\n" + "Read the memory first. " * 900)  # ~20,700
    write(ws, "USER.md", "# User\n\n" + "- Likes tea.\n" * 330)  # ~4,300: 4,000 of it
    found = _audit(cli, ws, "bootstrap")
    assert 15_000 < found["caps"]["MEMORY.md"] < 18_000
    assert found["findings"] and found["findings"][0]["path"] == "MEMORY.md"


def test_an_openclaw_config_given_sets_the_caps(cli: Runner, tmp_path: Path) -> None:
    ws = _ws_with_memory(tmp_path, 100)  # ~6,000 characters
    conf = tmp_path / "openclaw.json"
    defaults = {"workspace": str(ws), "bootstrapMaxChars": 1000.7}
    conf.write_text(json.dumps({"agents": {"defaults": defaults}}))
    assert cli("--openclaw-config", str(conf), "index")[0] == 0
    code, out, err = cli("--openclaw-config", str(conf), "audit", "--json", "--kind", "bootstrap")
    assert code == 0, err
    found = json.loads(out)
    assert found["caps"]["MEMORY.md"] == 1000  # a number, rounded down, as OpenClaw
    assert found["findings"] and str(conf) in found["findings"][0]["message"]


def test_a_word_nobody_asks_with_is_not_asked(cli: Runner, healthy: Path) -> None:
    """An entry of a 120,000-character token: the question leaves it out (it made the
    audit quadratic and held the daemon's searches, third outside attack)."""
    write(healthy, "MEMORY.md", HEALTHY_MEMORY + "- Build id " + "ab-" * 40_000 + "x blue.\n")
    found = _audit(cli, healthy, "unfindable")
    assert all(len(w) <= 40 for f in found["findings"] for w in f["query"].split())


def test_a_hostile_recall_count_file_is_no_count(tmp_path: Path) -> None:
    import os

    from indexer.search.recall_tally import load_recalls

    fifo = tmp_path / "a.recalls.json"
    os.mkfifo(fifo)
    deep = tmp_path / "b.recalls.json"
    deep.write_text("[" * 200_000)
    odd = tmp_path / "c.recalls.json"
    odd.write_text(json.dumps({"lines": {"a": 3, "b": -1, "c": 10**40, "d": True, "e": 1.5}}))
    link = tmp_path / "d.recalls.json"
    link.symlink_to(odd)
    assert load_recalls(fifo) == {} and load_recalls(deep) == {} and load_recalls(link) == {}
    assert load_recalls(odd) == {"a": 3}


def test_a_new_value_that_is_a_secret_is_never_shown(cli: Runner, healthy: Path) -> None:
    """A password changed in a daily log: the stale finding names its first 4
    characters, as the secrets check does (fourth outside attack: shown whole)."""
    write(healthy, "MEMORY.md", HEALTHY_MEMORY + "- Home wifi password: kestrel-blue-42\n")
    write(
        healthy, "memory/2026-11-25.md", "# 2026-11-25\n\n- Wifi password is now orange-cat-77.\n"
    )
    found = _audit(cli, healthy)
    text = json.dumps(found)
    assert "orange-cat-77" not in text and "kestrel-blue-42" not in text
    assert {f["kind"] for f in found["findings"]} >= {"secrets"}
    code, out, _ = cli("--workspace", str(healthy), "audit")
    assert code == 0 and "orange-cat-77" not in out and "kestrel-blue-42" not in out
