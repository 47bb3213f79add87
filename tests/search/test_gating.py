from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

from indexer.config import Config
from indexer.engine import AgentIndex
from indexer.errors import InvalidParams
from indexer.search.query.gating import skip_reason


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("thanks!", "small talk"),
        ("ok", "small talk"),
        ("Good morning :)", "small talk"),
        ("thank you very much", "small talk"),
        ("/reset", "command"),
        ("/model gpt-5", "command"),
        ("👍", "emoji"),
        ("🎉🎉 !!", "emoji"),
        ("   ", "empty"),
    ],
)
def test_skips_what_is_not_worth_a_search(query: str, why: str) -> None:
    assert skip_reason(query) == why


@pytest.mark.parametrize(
    "query",
    [
        "remember the wifi password?",
        "ok what did we decide about the deploy",
        "thanks, and when did I book the dentist",
        "KESTREL-0429",
        "/home/ana/notes/todo.md",
        "zigbee",
        "東京",
        "what is the gateway host",
        "ok 🙂 remind me",
    ],
)
def test_searches_real_questions_and_anything_about_remembering(query: str) -> None:
    assert skip_reason(query) is None


def test_gate_is_opt_in_and_reported(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- ok means the deploy passed.\n- Thanks go to Ana.\n")
    cfg = Config(workspace=ws, indexPath=tmp_path / "i.sqlite")
    with AgentIndex(cfg) as idx:
        idx.sync()
        gated = idx.search("thanks", gate=True)
        assert gated["results"] == [] and gated["skipped"] == "small talk"
        assert gated["mode"] == "skipped"
        # Without the gate the same words are searched (and found).
        plain = idx.search("thanks", min_score=0.0)
        assert plain["results"] and "skipped" not in plain
        asked = idx.search("remember who thanks go to?", gate=True, min_score=0.0)
        assert asked["results"] and asked["results"][0]["path"] == "MEMORY.md"
        with pytest.raises(InvalidParams):
            idx.search("thanks", gate="yes")
