from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conftest import write

from indexer.config import Config, QueryConfig, SessionsConfig
from indexer.engine import AgentIndex
from indexer.search.candidates import Candidate, ChunkRows
from indexer.search.stages.balance import Balance, Mmr
from indexer.search.stages.base import is_sorted
from indexer.search.stages.signals import Decay
from indexer.store import SearchRow
from indexer.store.records import log_date

_ROWS: dict[int, SearchRow] = {}


def hit(
    path: str, score: float, source: str = "memory", exact: bool = False, text: str = "x"
) -> Candidate:
    cid = abs(hash(path + text)) % 10**9
    _ROWS[cid] = SearchRow(cid, path, source, 1, 2, "", text, 0.0)
    return Candidate(cid, source, 0.0, score, score, exact)


def rows() -> ChunkRows:
    """Every row the tests made, known up front: the store is never asked."""
    return ChunkRows(None, _ROWS.values())  # type: ignore[arg-type]


def path_of(h: Candidate) -> str:
    return _ROWS[h.id].path


def ctx(**query: object) -> Any:
    """What the stages read of a run, for candidates made here (``hit``)."""
    return SimpleNamespace(
        rows=rows(),
        cfg=Config(query=QueryConfig(**query)),  # type: ignore[arg-type]
        today=date(2026, 11, 21),
        depth=30,
        facts=SimpleNamespace(both_sources=True),
    )


def test_log_date() -> None:
    assert log_date("memory/2026-11-21.md") == date(2026, 11, 21)
    assert log_date("memory/logs/2026-01-02-standup.md") == date(2026, 1, 2)
    assert log_date("MEMORY.md") is None and log_date("memory/notes.md") is None
    assert log_date("memory/2026-13-45.md") is None


def test_decay_only_for_dated_logs_and_never_exact_hits() -> None:
    hits = [
        hit("memory/2026-07-25.md", 0.9),
        hit("memory/2026-11-20.md", 0.6),
        hit("MEMORY.md", 0.5),
        hit("memory/2026-07-24.md", 0.8, exact=True),
        hit("sessions/a.jsonl", 0.55, source="sessions"),
    ]
    before = list(hits)
    decayed = Decay()(ctx(halfLifeDays=30.0), hits)
    assert hits == before  # a new list; the candidates given are untouched
    assert is_sorted(decayed)
    order = [path_of(h) for h in decayed]
    assert order[0] == "memory/2026-07-24.md"  # an exact hit from 120 days ago stays first
    by = {path_of(h): h.score for h in decayed}
    assert abs(by["memory/2026-07-25.md"] - 0.9 * 0.5 ** (119 / 30)) < 1e-9
    assert by["MEMORY.md"] == 0.5 and by["sessions/a.jsonl"] == 0.55
    assert abs(by["memory/2026-11-20.md"] - 0.6 * 0.5 ** (1 / 30)) < 1e-9


def test_balance_keeps_memory_slots() -> None:
    hits = [hit(f"sessions/s{i}.jsonl", 0.9 - i * 0.01, "sessions") for i in range(10)]
    hits += [hit("memory/a.md", 0.5), hit("memory/b.md", 0.4)]
    balanced = Balance()(ctx(memoryShare=0.5), hits)
    for n in range(1, 7):  # every first n: at least half memory, while there is any
        assert sum(h.source == "memory" for h in balanced[:n]) >= min(2, n // 2)
    assert is_sorted(balanced)
    assert [path_of(h) for h in balanced[:4]][1::2] == ["memory/a.md", "memory/b.md"]
    only_sessions = [h for h in hits if h.source == "sessions"]
    assert Balance()(ctx(memoryShare=0.5), only_sessions) == only_sessions


def test_mmr_prefers_diverse_results_and_keeps_exact_first() -> None:
    a = hit("memory/a.md", 0.90, text="deploy the gateway to the pantry pi tonight")
    b = hit("memory/b.md", 0.89, text="deploy the gateway to the pantry pi tonight again")
    c = hit("memory/c.md", 0.70, text="garden tomatoes need water every morning")
    e = hit("memory/e.md", 0.30, exact=True, text="KESTREL-0429")
    out = Mmr()(ctx(mmrLambda=0.3), [a, b, c, e])
    assert out[0].id == e.id and [path_of(h) for h in out[1:3]] == ["memory/a.md", "memory/c.md"]
    assert is_sorted(out) and out[0].score == 0.90  # moved up: ranked as the first


def test_memory_files_are_not_crowded_out(cfg: Config, workspace: Path, tmp_path: Path) -> None:
    write(workspace, "memory/2026-11-10.md", "# deploys\n- We deploy the gateway on Fridays.\n")
    sdir = tmp_path / "sess"
    for n in range(8):
        lines = [
            json.dumps(
                {
                    "type": "message",
                    "role": "user",
                    "content": f"deploy deploy gateway deploy attempt {n}.{i}",
                }
            )
            for i in range(40)
        ]
        write(sdir, f"s{n}.jsonl", "\n".join(lines) + "\n")
    c = replace(cfg, sessions=SessionsConfig(dir=str(sdir)), query=QueryConfig(memoryShare=0.34))
    with AgentIndex(c) as idx:
        idx.sync()
        # balance (off by default: it carried to no set it was not made on)
        res = idx.search("deploy the gateway", max_results=6, stages={"balance": True})["results"]
        assert any(r["source"] == "memory" for r in res)
        assert sum(r["source"] == "sessions" for r in res) >= 3
    plain = replace(c, query=QueryConfig(memoryShare=0.0))
    with AgentIndex(plain) as idx:  # without the share, transcripts take every slot
        res = idx.search("deploy the gateway", max_results=6, stages={"balance": True})
        assert all(r["source"] == "sessions" for r in res["results"])
        # by default too; the memory file is still among the candidates (each source
        # is searched on its own), below the transcripts that say more
        full = idx.search("deploy the gateway", max_results=50)["results"]
        assert any(r["source"] == "memory" for r in full)


def test_tied_hits_rank_by_file_and_line_not_by_when_they_were_indexed(
    cfg: Config, workspace: Path
) -> None:
    # Two files tie exactly for this query (each holds both numbers, mirrored);
    # file b is indexed first, then a is rewritten, so a's chunk has the newer id.
    for name, (x, y) in {"a": ("3", "17"), "b": ("17", "3")}.items():
        body = "\n".join(
            f"- note {x} of file {y}" if j else f"- note {y} of file {x}" for j in range(6)
        )
        write(workspace, f"memory/{name}.md", body + "\n")
    with AgentIndex(cfg) as idx:
        idx.sync()
        first = [r["path"] for r in idx.search("note 3 file 17", min_score=0)["results"]]
        write(workspace, "memory/a.md", (workspace / "memory/a.md").read_text() + "\n")
        idx.sync()
        again = [r["path"] for r in idx.search("note 3 file 17", min_score=0)["results"]]
    assert first == again == ["memory/a.md", "memory/b.md"]
