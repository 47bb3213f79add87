"""explain (each result's score parts), abstain (no results when nothing is likely to
answer), and one memory found in both sources returned once, citing both."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import Runner, write
from fake_openai import FakeOpenAI

from indexer.config import (
    Config,
    ProviderConfig,
    QueryConfig,
    RemoteProviderConfig,
    SessionsConfig,
)
from indexer.engine import AgentIndex
from indexer.search.stages.words import EXACT_BOOST
from indexer.selection import select_provider

TURNS = [
    ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "That's cool! I ran a charity race for mental health last Saturday."),
    ("Caroline", "I'm looking into counseling certification and psychology courses."),
    ("Melanie", "I painted a sunrise over the lake last year, my favourite piece."),
]


@pytest.fixture
def chat(tmp_path: Path) -> Config:
    """A daily log and the transcript it was written from: the same four turns."""
    ws = tmp_path / "ws"
    lines = ["# 2023-05-08", "", "## Session 1", ""]
    lines += [f"- [D1:{i}] 13:56 **{who}**: {text}" for i, (who, text) in enumerate(TURNS, 1)]
    write(ws, "memory/2023-05-08.md", "\n".join(lines) + "\n")
    for n in range(2, 6):
        write(ws, f"memory/2023-06-0{n}.md", f"# 2023-06-0{n}\n\n- Bought milk and bread.\n")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    with (sessions / "s1.jsonl").open("w") as fh:
        for who, text in TURNS:
            role = "user" if who == "Caroline" else "assistant"
            fh.write(
                json.dumps({"type": "message", "role": role, "speaker": who, "content": text})
                + "\n"
            )
    return Config(
        workspace=ws,
        indexPath=tmp_path / "i.sqlite",
        sessions=SessionsConfig(dir=str(sessions), idleFlushMs=0),
    )


def test_keyword_explain_parts(chat: Config) -> None:
    with AgentIndex(chat) as idx:
        idx.sync()
        res = idx.search("charity race", mode="keyword", explain=True, sources=["memory"])
        top = res["results"][0]
        parts = top["explain"]
        assert parts["bm25"] > 0 and parts["keywordScore"] == top["textScore"]
        assert parts["keywordScore"] == pytest.approx(parts["bm25"] / (1 + parts["bm25"]), 1e-3)
        assert "exactBoost" not in parts and parts["allWords"] in (True, False)
        assert parts["score"] == top["score"]
        assert "cosine" not in parts and "rerank" not in parts
        assert res["explain"]["minScore"] == 0.35 and res["explain"]["exactBoost"] == 1.25
        assert 0.0 <= res["relevance"] <= 1.0
        quoted = idx.search('"charity race"', mode="keyword", explain=True)["results"][0]
        assert quoted["explain"]["exact"] and quoted["explain"]["exactBoost"] == 1 + EXACT_BOOST
        plain = idx.search("charity race", mode="keyword")
        assert "explain" not in plain and "explain" not in plain["results"][0]
        assert "relevance" not in plain


def test_a_boosted_result_shows_a_score_of_at_most_1(tmp_path: Path) -> None:
    """The protocol says a score is 0..1; a rule line asked about (x1.5) showed 1.26
    (9 of holdout_d's 50 questions had a top score above 1). It shows 1 now, explain
    keeps the score it was ranked by, and the order is the ranking's."""
    ws = tmp_path / "ws"
    write(ws, "USER.md", "# About me\n\n- Always give stock weights in kg, never in pounds.\n")
    write(ws, "memory/2026-11-20.md", "# 2026-11-20\n\n- Weighed the hoggets: 38 kg average.\n")
    with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite")) as idx:
        idx.sync()
        q = "should you give me stock weights in pounds or kg?"
        res = idx.search(q, mode="keyword", explain=True)["results"]
        assert res[0]["path"] == "USER.md"
        assert res[0]["score"] == 1.0 and res[0]["explain"]["rankScore"] > 1.0
        assert res[0]["explain"]["rules"] == 1.5 and res[0]["explain"]["score"] == 1.0
        assert all(0.0 <= r["score"] <= 1.0 for r in res)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    f = FakeOpenAI(dims=32).start()
    yield f
    f.stop()


def test_hybrid_explain_parts_add_up(
    chat: Config, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    c = replace(
        chat,
        provider=ProviderConfig(
            name="openai", dims=32, remote=RemoteProviderConfig(baseUrl=fake.base_url)
        ),
    )
    sel = select_provider(c)
    with AgentIndex(c, provider=sel.provider) as idx:
        idx.sync()
        res = idx.search("sunrise painting", explain=True, min_score=0.0)
        assert res["mode"] == "hybrid"
        wv, wt = res["explain"]["vectorWeight"], res["explain"]["textWeight"]
        for r in res["results"]:
            p = r["explain"]
            assert {"keywordScaled", "vectorScaled", "fused", "score"} <= p.keys()
            assert p["fused"] == pytest.approx(
                wv * p["vectorScaled"] + wt * p["keywordScaled"], abs=2e-4
            )
            assert p["fused"] == r["fusedScore"] and p["score"] == r["score"]
            if "cosine" in p:
                assert p["cosine"] == r["vectorScore"]
        # the score is the fused value times one factor: the best scores its own match
        scale = res["explain"]["scoreScale"]
        for r in res["results"]:
            assert r["score"] == pytest.approx(r["fusedScore"] * scale, abs=2e-4)
        scores = [r["score"] for r in res["results"]]
        assert scores == sorted(scores, reverse=True)


def test_the_same_memory_in_both_sources_is_one_result(chat: Config) -> None:
    with AgentIndex(chat) as idx:
        idx.sync()
        res = idx.search("charity race mental health", mode="keyword")["results"]
        top = res[0]
        assert {top["source"], *(a["source"] for a in top.get("also", []))} == {
            "memory",
            "sessions",
        }
        (also,) = top["also"]
        cited = {(top["path"], top["citation"]), (also["path"], also["citation"])}
        assert ("sessions/s1.jsonl", "sessions/s1.jsonl#L1-L4") in cited
        assert len({r["path"] for r in res}) == len(res)  # the copy took no slot
        # One source asked for: nothing to merge.
        only = idx.search("charity race mental health", mode="keyword", sources=["sessions"])
        assert only["results"][0]["path"] == "sessions/s1.jsonl"
        assert "also" not in only["results"][0]


def test_abstain_on_a_question_about_someone_memory_never_mentions(chat: Config) -> None:
    with AgentIndex(chat) as idx:
        idx.sync()
        gone = idx.search("What did Gina realize after her charity race?", abstain=True)
        assert gone["results"] == [] and gone["relevance"] == 0.05, gone
        assert "below query.abstainBelow 0.1" in gone["abstained"]
        # Named and present: answered, whatever the case of the question.
        assert idx.search("what did Melanie do at the charity race?", abstain=True)["results"]
        assert idx.search("What did melanie do at the charity race?", abstain=True)["results"]
        # Not asked to abstain: the least-bad answer as before.
        assert idx.search("What did Gina realize after her charity race?")["results"]


def test_abstain_on_a_question_about_the_wrong_person(chat: Config) -> None:
    chat = replace(chat, query=QueryConfig(abstainBelow=0.3))  # the default is 0.1
    with AgentIndex(chat) as idx:
        idx.sync()
        right = idx.search("What did Melanie do at the charity race?", abstain=True)
        assert right["results"] and "abstained" not in right
        assert right["relevance"] >= 0.3
        # Melanie ran the race: asked about Caroline, the best lines are someone
        # else's, and nothing else holds the words.
        wrong = idx.search("What did Caroline realize after her charity race?", abstain=True)
        assert wrong["results"] == [] and "below query.abstainBelow 0.3" in wrong["abstained"]
        assert wrong["relevance"] < 0.3
        # Not asked to abstain: the least-bad answer as before.
        assert idx.search("What did Caroline realize after her charity race?")["results"]
        nothing = idx.search("kubernetes ingress controller", abstain=True)
        assert nothing["results"] == [] and nothing["abstained"]
    strict = replace(chat, query=QueryConfig(abstainBelow=1.0))
    with AgentIndex(strict) as idx:
        # Melanie is a speaker here, so the words are "sunrise" and "kayak": one of
        # two is on her line, 0.5, below a floor of 1.
        held = idx.search("Melanie sunrise kayak", abstain=True)
        assert held["results"] == [] and held["relevance"] == 0.5
        assert idx.search("Melanie sunrise lake", abstain=True)["results"]


def test_cli_explain_and_abstain(chat: Config, cli: Runner, tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text(
        f'workspace = "{chat.workspace}"\nindexPath = "{chat.indexPath}"\n'
        f'[sessions]\ndir = "{chat.sessions.dir}"\n'
    )
    assert cli("--config", str(conf), "index")[0] == 0
    code, out, _ = cli("--config", str(conf), "search", "charity race", "--explain")
    assert code == 0 and "ranked by: fusion=weighted" in out and "bm25=" in out
    assert "also sessions/s1.jsonl#L1-L4" in out or "also memory/2023-05-08.md" in out
    code, out, _ = cli(
        "--config",
        str(conf),
        "search",
        "What did Gina realize after her charity race?",
        "--abstain",
    )
    assert code == 0 and out.startswith("No results: relevance 0.05")
    code, out, _ = cli("--config", str(conf), "search", "charity race", "--explain", "--json")
    data = json.loads(out)
    assert "explain" in data["results"][0] and "relevance" in data


def test_the_names_a_question_asks_about() -> None:
    from indexer.search.query.names import names_in

    assert names_in("What did Caroline's sister say? Then Tim left.") == ["caroline", "tim"]
    # A sentence's first word, stop words, months, weekdays and CamelCase are no names.
    assert names_in("When did we meet in May, on Monday, about OpenClaw?") == []
    assert names_in("Where did I put the keys?") == []
    assert names_in("What did José say?") == ["josé"]
    assert names_in("Garden Gate Repair Notes") == []  # Title Case names nothing


def test_a_name_decides_only_when_every_name_is_absent(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- José Ortega keeps the garden budget.\n"
          "- The Smith family brought pie to the dinner.\n- Dana lives in Madrid.\n")  # fmt: skip
    write(ws, "memory/people/caroline.md", "- works at the bakery on Elm Street\n")
    cfg = Config(workspace=ws, indexPath=tmp_path / "i.sqlite")
    with AgentIndex(cfg) as idx:
        idx.sync()
        for answered in (
            "What did José say about the garden budget?",  # accents
            "What did the Smiths bring to the dinner?",  # another form of the name
            "What did Dana say about Lisbon?",  # one name is there
            "Where does Caroline work?",  # in the file's path only
        ):
            res = idx.search(answered, abstain=True)
            assert res["results"] and res["relevance"] > 0.05, (answered, res)
        gone = idx.search("What did Gina say about the garden budget?", abstain=True)
        assert gone["results"] == [] and gone["relevance"] == 0.05
