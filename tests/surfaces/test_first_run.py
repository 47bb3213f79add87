"""What a new user sees on a tiny workspace: positive scores that rank the right file
first and pass the default floor, keyword-only and hybrid (the local MiniLM model),
and the example workspace answering the demo's question."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import write

from indexer.config import Config, LocalProviderConfig, ProviderConfig
from indexer.engine import AgentIndex
from indexer.selection import select_provider

REPO = Path(__file__).resolve().parents[2]
FLOOR = Config().query.minScore  # the default floor, 0.35

MEMORY = """# Long-term memory

## Infrastructure
- The gateway host is a Raspberry Pi 5 named pantry-pi.
- The staging database listens on port 5433; production uses 5432.
- Package manager: we use bun, not npm.
"""
DAILY = """# 2026-11-20

## Notes
- Ticket ZEBRA-1234: the garden sensor drops off the network at night.
- Lunch with Priya; she recommended a bakery on Rua Augusta.
- Booked the dentist for next Tuesday.
"""

# query -> the file that answers it
QUERIES = {
    "ZEBRA-1234": "memory/2026-11-20.md",
    "which port does the staging database use": "MEMORY.md",
    "gateway host": "MEMORY.md",
    "bun or npm": "MEMORY.md",
    "dentist appointment": "memory/2026-11-20.md",
}


def _hybrid(cfg: Config, model: Path) -> Config:
    local = LocalProviderConfig(modelPath=str(model))
    return replace(cfg, provider=ProviderConfig(name="local", local=local))


@pytest.fixture
def two_files(tmp_path: Path) -> Config:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", MEMORY)
    write(ws, "memory/2026-11-20.md", DAILY)
    return Config(workspace=ws, indexPath=tmp_path / "i.sqlite")


@contextlib.contextmanager
def _index(cfg: Config) -> Iterator[AgentIndex]:
    """The index with the provider the config names (none: keyword only)."""
    sel = select_provider(cfg)
    try:
        with AgentIndex(cfg, provider=sel.provider) as idx:
            yield idx
    finally:
        if sel.provider is not None:
            sel.provider.close()


def _check(cfg: Config, mode: str) -> None:
    with _index(cfg) as idx:
        idx.sync()
        for query, want in QUERIES.items():
            got = idx.search(query)
            assert got["mode"] == mode, got["fallback"]
            res = got["results"]
            assert res, query
            assert res[0]["path"] == want, (query, res)
            # Shown scores are what the floor judges: never 0, never under it.
            for r in res:
                assert r["score"] >= FLOOR > 0, (query, r)
            if mode == "hybrid":
                assert all("fusedScore" in r for r in res)
            # The other file, when shown, scores lower (a real ranking, not a tie).
            if len(res) > 1 and res[1]["path"] != want and mode == "keyword":
                assert res[1]["score"] < res[0]["score"], (query, res)


def test_two_file_workspace_keyword(two_files: Config) -> None:
    _check(two_files, "keyword")


def test_two_file_workspace_hybrid(two_files: Config, model_path: Path) -> None:
    _check(_hybrid(two_files, model_path), "hybrid")


@pytest.mark.parametrize("files", [1, 2, 5])
def test_keyword_scores_are_positive_at_every_size(tmp_path: Path, files: int) -> None:
    """FTS5's own IDF is 0 for a term in half the chunks or more: with one to five
    files every score was 0.000. bm25.py's never falls to zero."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", MEMORY)
    for n in range(1, files):
        write(ws, f"memory/2026-11-{n:02d}.md", f"# day {n}\n\n- The gateway host was fine.\n")
    with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite")) as idx:
        idx.sync()
        res = idx.search("staging database port", min_score=0.0)["results"]
        assert res and res[0]["path"] == "MEMORY.md"
        assert res[0]["score"] > 0.2
        res = idx.search("gateway", min_score=0.0)["results"]
        assert len(res) == files and all(r["score"] > 0.05 for r in res)


def test_below_the_floor_only_for_its_words_and_shown_at_the_floor(two_files: Config) -> None:
    with AgentIndex(two_files) as idx:
        idx.sync()
        # Every word present, but weak: kept, and its score is the floor, not less.
        res = idx.search("the garden", min_score=0.99)["results"]
        assert [r["path"] for r in res] == ["memory/2026-11-20.md"]
        assert res[0]["score"] == pytest.approx(0.99)
        assert idx.search("garden zebra-9999 nothing", min_score=0.99)["results"] == []


EXAMPLE = REPO / "examples" / "workspace"
DEMO_QUESTION = "which machine is the gateway"


def test_example_workspace_answers_the_demo_question(tmp_path: Path, model_path: Path) -> None:
    cfg = Config(workspace=EXAMPLE, indexPath=tmp_path / "i.sqlite")
    for c, mode in ((cfg, "keyword"), (_hybrid(cfg, model_path), "hybrid")):
        with _index(c) as idx:
            idx.sync()
            got = idx.search(DEMO_QUESTION)
            assert got["mode"] == mode
            assert got["results"][0]["path"] == "MEMORY.md", got["results"]
            assert "pantry-pi" in got["results"][0]["snippet"]
    # One word per entry ("Marco *runs* the bakery", "the *gateway* host"): keyword
    # search cannot tell them apart, the model can.
    with _index(_hybrid(cfg, model_path)) as idx:
        top = idx.search("which machine runs the gateway")["results"][0]
        assert "pantry-pi" in top["snippet"]
