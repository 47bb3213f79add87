"""A question about a decision: the note recording it comes first (search/decisions.py)."""

from __future__ import annotations

from pathlib import Path

from conftest import write

from indexer.config import Config
from indexer.engine import AgentIndex
from indexer.search.stages.decision import asks_decision


def _workspace(ws: Path) -> None:
    write(ws, "memory/2026-10-01.md", "# 2026-10-01\n\n- Bathroom quotes: builder "
          "Nordbygg 148 500, builder VVS-Partner 139 000; both start in October.\n")  # fmt: skip
    write(ws, "memory/2026-10-03.md", "# 2026-10-03\n\n- Asked both builders about the "
          "bathroom floor drain; the Nordbygg builder measured the bathroom.\n")  # fmt: skip
    write(ws, "memory/2026-10-06.md", "# 2026-10-06\n\n- Long day at the depot, signal "
          "tests ran late and the train home was cancelled.\n- Decided: Nordbygg does the "
          "bathroom, certified for wet rooms.\n")  # fmt: skip
    write(ws, "memory/2026-10-09.md", "# 2026-10-09\n\n- [D1:3] Jonas: I decided the "
          "builder and the bathroom can wait, builder talk all day.\n")  # fmt: skip
    write(ws, "memory/2026-10-11.md", "# 2026-10-11\n\n- The foreman decided at 10:30 "
          "that the builder crew starts the bathroom Monday.\n")  # fmt: skip


def test_the_recorded_decision_comes_first(tmp_path: Path) -> None:
    """The quotes and the visits rank above the decision on their words; asked what
    was decided, the note recording it is first and says why. A person saying "I
    decided" in a conversation records no decision; a question that asks for none
    ranks as before; nor does a time's colon make a decision of "decided at 10:30"."""
    ws = tmp_path / "ws"
    _workspace(ws)
    with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite")) as idx:
        idx.sync()
        plain = idx.search("builder for the bathroom", min_score=0, mode="keyword")
        paths = [r["path"] for r in plain["results"]]
        assert paths.index("memory/2026-10-06.md") >= 2  # on its words: below the others
        for q in ("Which builder did we go with for the bathroom?",
                  "Did we end up picking a builder for the bathroom?"):  # fmt: skip
            res = idx.search(q, min_score=0, mode="keyword", explain=True)["results"]
            assert res[0]["path"] == "memory/2026-10-06.md", q
            assert res[0]["explain"]["decision"] >= 1  # the question's words its line holds
            assert all("decision" not in r["explain"] for r in res[1:])
            # moved up: it scores as the hit it passed, above its own words' score
            assert res[0]["score"] >= res[1]["score"] and res[0]["score"] > res[0]["textScore"]


def test_what_asks_for_a_decision() -> None:
    assert asks_decision("Did I say yes to the Malmö job?")
    assert asks_decision("What did we settle on for the electricity deal?")
    assert asks_decision("Which builder did we go with?")
    assert not asks_decision("Where is the builder going?")
    assert not asks_decision("What did the builder say about the drain?")
