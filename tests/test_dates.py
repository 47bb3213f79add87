"""Dates a query names: which periods are read from it (dates.py), and the daily
logs dated inside them ranking above the same words written another month."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
from conftest import write

from indexer.config import Config, QueryConfig
from indexer.config_file import ConfigError, load_config
from indexer.engine import MemoryIndex
from indexer.search.dates import in_period, query_periods


@pytest.mark.parametrize(
    ("text", "periods"),
    [
        ("What did we decide in March 2026?", ((2026, 3),)),
        ("Who came to dinner on May 3, 2023?", ((2023, 5),)),
        ("the movie we watched on 1 May, 2022", ((2022, 5),)),
        ("meeting on Sept. 5th 2021", ((2021, 9),)),
        ("dec 2020 notes", ((2020, 12),)),
        ("the 3rd of March", ((None, 3),)),
        ("Which beach did we visit in June?", ((None, 6),)),
        ("plans for mid-July", ((None, 7),)),
        ("what changed in 2024 and on 2025-11-03", ((2025, 11), (2024, None))),
        ("logs from 2025-11 and 2025-11", ((2025, 11),)),
        # Month names that are words or names here: no period.
        ("May I ask what we decided?", ()),
        ("we may go hiking", ()),
        ("the march was long", ()),
        ("What did June say about the trip?", ()),
        ("Ask Jan about the budget", ()),
        # Numbers that are not years.
        ("version 2.2019 build", ()),
        ("the 2020s", ()),
        ("port 80, pid 12345", ()),
        # The longest query a request may carry, dates everywhere: read once each.
        ("in May " * 1400, ((None, 5),)),
        ("x" * 9990 + " May", ()),
    ],
)
def test_query_periods(text: str, periods: tuple[tuple[int | None, int | None], ...]) -> None:
    assert query_periods(text) == periods


def test_in_period() -> None:
    assert in_period(date(2026, 3, 4), ((2026, 3),))
    assert in_period(date(2021, 3, 4), ((None, 3),))
    assert in_period(date(2026, 7, 1), ((2025, 11), (2026, None)))
    assert not in_period(date(2026, 4, 1), ((2026, 3), (None, 5)))
    assert not in_period(date(2026, 3, 4), ())


@pytest.fixture
def logs(tmp_path: Path) -> Config:
    """The same kind of note in two months' daily logs and in MEMORY.md; the
    February one is written more strongly (it wins on words alone)."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\nThe team offsite is planned every spring.\n")
    write(
        ws,
        "memory/2026-02-10.md",
        "# 2026-02-10\n\n- Team offsite planning: offsite venue shortlist, offsite budget.\n",
    )
    write(ws, "memory/2026-03-12.md", "# 2026-03-12\n\n- Team offsite: booked the venue.\n")
    write(ws, "notes/2026-03-01.md", "# 2026-03-01\n\n- Offsite ideas from the team.\n")
    return Config(workspace=ws, extraPaths=(), indexPath=tmp_path / "i.sqlite")


def _paths(idx: MemoryIndex, query: str, **kw: object) -> list[str]:
    return [r["path"] for r in idx.search(query, min_score=0.0, **kw)["results"]]  # type: ignore[arg-type]


def test_logs_dated_in_the_named_month_rank_first(logs: Config) -> None:
    with MemoryIndex(logs) as idx:
        idx.sync()
        plain = _paths(idx, "team offsite")
        assert plain[0] == "memory/2026-02-10.md"  # words alone
        dated = _paths(idx, "team offsite in March")
        assert dated[0] == "memory/2026-03-12.md"
        assert _paths(idx, "team offsite in March 2025")[0] == "memory/2026-02-10.md"
        assert _paths(idx, "team offsite in 2026-03")[0] == "memory/2026-03-12.md"
        res = idx.search("team offsite in March", min_score=0.0, explain=True)
        assert res["explain"]["dates"] == ["*-03"]
        assert res["explain"]["dateBoost"] == 0.5
        first = res["results"][0]
        assert first["explain"]["dateBoost"] == 1.5
        # The order is boosted; the score shown is still the chunk's own, 0..1.
        assert first["score"] == first["textScore"] <= 1.0
        assert first["explain"]["rankKey"] == pytest.approx(1.5 * first["score"], abs=1e-3)
        # Only dated daily logs: MEMORY.md and files outside memory/ never are.
        assert all("dateBoost" not in r["explain"] for r in res["results"][1:])
    off = replace(logs, query=QueryConfig(dateBoost=0.0))
    with MemoryIndex(off) as idx:
        assert _paths(idx, "team offsite in March")[0] == "memory/2026-02-10.md"
        assert idx.search("team offsite in March", explain=True)["explain"]["dates"] == []


def test_date_boost_is_checked_in_the_config_file(tmp_path: Path) -> None:
    f = tmp_path / "memindex.toml"
    f.write_text("[query]\ndateBoost = 1.5\n")
    assert load_config(f).query.dateBoost == 1.5
    f.write_text("[query]\ndateBoost = -1\n")
    with pytest.raises(ConfigError, match="dateBoost"):
        load_config(f)
