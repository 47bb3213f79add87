from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import write
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.config import Config
from indexer.engine import AgentIndex
from indexer.errors import InvalidParams
from indexer.search.query.parse import parse_query
from indexer.search.snippets import make_snippet
from indexer.search.stages.base import bm25_to_score


@pytest.fixture
def logs(tmp_path: Path) -> Config:
    """Thirty daily logs, one of them holding an exact ID on a known line."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- The gateway host is pantry-pi.\n- Coffee: flat white.\n")
    for d in range(1, 31):
        lines = [f"# 2026-10-{d:02d}", ""]
        lines += [
            f"- Routine note {i} about the garden, the weather and errands." for i in range(40)
        ]
        if d == 17:
            lines[25] = "- Filed KESTREL-0429: Zigbee pairing fails on the hallway sensor."
        if d == 9:
            lines[30] = (
                "- Changed `memory.qmd.paths` in ~/kestrel/config.yaml to add the notes dir."
            )
        if d == 3:
            lines[10] = "- 東京の友人と年末に会う予定。"
        write(ws, f"memory/2026-10-{d:02d}.md", "\n".join(lines) + "\n")
    return Config(workspace=ws, indexPath=tmp_path / "i.sqlite")


def test_exact_id_is_top_with_the_right_lines(logs: Config) -> None:
    with AgentIndex(logs) as idx:
        idx.sync()
        res = idx.search("KESTREL-0429")["results"]
        top = res[0]
        assert top["path"] == "memory/2026-10-17.md"
        assert top["startLine"] <= 26 <= top["endLine"]
        assert top["snippetStartLine"] <= 26 <= top["snippetEndLine"]
        assert "KESTREL-0429" in top["snippet"]
        assert top["citation"] == f"memory/2026-10-17.md#L{top['startLine']}-L{top['endLine']}"
        # The exact ID wins even inside an ordinary question.
        q = idx.search("what was the status of kestrel-0429 again?")["results"]
        assert q[0]["path"] == "memory/2026-10-17.md"


def test_paths_and_config_keys_match_as_written(logs: Config) -> None:
    with AgentIndex(logs) as idx:
        idx.sync()
        for query in ("memory.qmd.paths", "~/kestrel/config.yaml"):
            top = idx.search(query)["results"][0]
            assert top["path"] == "memory/2026-10-09.md", query
            assert top["startLine"] <= 33 <= top["endLine"]


def test_ordinary_question_is_or_not_and(logs: Config) -> None:
    with AgentIndex(logs) as idx:
        idx.sync()
        # "zeppelin" is nowhere: AND matching would return nothing.
        res = idx.search("which host runs the gateway zeppelin?")["results"]
        assert res and res[0]["path"] == "MEMORY.md"


def test_stop_word_only_question_still_answers(logs: Config) -> None:
    with AgentIndex(logs) as idx:
        idx.sync()
        assert idx.search("what is it about", min_score=0)["results"]


def test_an_id_in_a_question_is_its_anchor(tmp_path: Path) -> None:
    """Beside an exact token, the question's stop words are not searched: a chatty
    note full of "what's" and "about" never outranks the one with the ID."""
    assert parse_query("What's OPS-2291 about?").terms == ()
    assert parse_query('what is "the heron" about').terms == ()
    assert parse_query("what is it about").terms  # nothing else: stop words it is
    ws = tmp_path / "ws"
    write(ws, "memory/2026-11-02.md", "# 2026-11-02\n\n- What's it about? What's that "
          "about? It's about what it's about.\n")  # fmt: skip
    write(ws, "memory/2026-11-03.md", "# 2026-11-03\n\n- Filed OPS-2291: the replica "
          "lags every night.\n")  # fmt: skip
    with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite")) as idx:
        idx.sync()
        res = idx.search("What's OPS-2291 about?", min_score=0)["results"]
        assert [r["path"] for r in res] == ["memory/2026-11-03.md"]
    # A short question's other word matched by a short note ("handle" for "handling",
    # stronger on BM25 than the longer note with the ID): the ID's note still first.
    write(ws, "MEMORY.md", "# Memory\n\n- GitHub handle dreyes.\n")
    write(ws, "memory/2026-11-04.md", "# 2026-11-04\n\n- OPS-2304 opened: rotate the "
          "gateway certificates before they expire; Marcus owns it, Dana reviews.\n")  # fmt: skip
    with AgentIndex(Config(workspace=ws, indexPath=tmp_path / "i.sqlite")) as idx:
        idx.sync()
        # exactAnchor (off by default: it carried to no set it was not made on)
        res = idx.search("Who's handling OPS-2304?", min_score=0, stages={"exactAnchor": True})
        res = res["results"]
        assert [r["path"] for r in res] == ["memory/2026-11-04.md", "MEMORY.md"]
        # stronger on its words, ranked after: scored below the ID's note
        assert res[1]["textScore"] > res[0]["textScore"] and res[1]["score"] <= res[0]["score"]


def test_quoted_phrase_is_required(logs: Config) -> None:
    with AgentIndex(logs) as idx:
        idx.sync()
        assert idx.search('"flat white"')["results"][0]["path"] == "MEMORY.md"
        assert idx.search('"white flat"', min_score=0)["results"] == []


def test_cjk_is_searchable(logs: Config) -> None:
    with AgentIndex(logs) as idx:
        idx.sync()
        for q in ("東京", "年末", "東京の友人"):
            res = idx.search(q)["results"]
            assert res and res[0]["path"] == "memory/2026-10-03.md", q


def test_scores_are_in_0_1_and_ordered(logs: Config) -> None:
    assert bm25_to_score(0.0) == 0.0
    assert bm25_to_score(5.0) == 0.0  # positive ranks are not matches
    vals = [bm25_to_score(-x) for x in (0.1, 1, 3, 10, 100)]
    assert vals == sorted(vals) and all(0 < v < 1 for v in vals)
    with AgentIndex(logs) as idx:
        idx.sync()
        res = idx.search("garden weather errands routine", min_score=0, max_results=20)["results"]
        assert res
        scores = [r["score"] for r in res]
        assert all(0 <= s <= 1 for s in scores)
        assert scores == sorted(scores, reverse=True)


def test_min_score_never_drops_an_exact_hit(logs: Config) -> None:
    with AgentIndex(logs) as idx:
        idx.sync()
        res = idx.search("KESTREL-0429", min_score=0.99)["results"]
        assert [r["path"] for r in res] == ["memory/2026-10-17.md"]


def test_overlapping_chunks_merge_into_one_result(logs: Config) -> None:
    """The ID sits where two chunks overlap: one result, covering both chunks."""
    with AgentIndex(logs) as idx:
        idx.sync()
        rows = idx.store.db.execute(
            "SELECT start_line, end_line FROM chunks WHERE path='memory/2026-10-17.md' "
            "AND text LIKE '%KESTREL-0429%' ORDER BY start_line"
        ).fetchall()
        assert len(rows) == 2  # the fixture really puts it in an overlap
        (r,) = idx.search("KESTREL-0429", min_score=0.0)["results"]
        assert (r["startLine"], r["endLine"]) == (rows[0][0], rows[1][1])
        assert r["citation"] == f"memory/2026-10-17.md#L{rows[0][0]}-L{rows[1][1]}"


def test_snippet_is_centred_and_bounded() -> None:
    text = "\n".join(f"filler line {i} " + "padding " * 10 for i in range(60))
    lines = text.split("\n")
    lines[40] = "the needle KESTREL-0429 is here"
    q = parse_query("KESTREL-0429")
    snip, a, b, _ = make_snippet("\n".join(lines), 100, q, 700)
    assert len(snip) <= 700
    assert a <= 140 <= b and "needle" in snip
    long_line = "x " * 2000 + "the needle KESTREL-0429 " + "y " * 2000
    snip, a, b, _ = make_snippet(long_line, 5, q, 700)
    assert len(snip) <= 700 and "KESTREL-0429" in snip and a == b == 5


def test_snippet_reads_on_past_the_matched_line() -> None:
    """A conversation: every line names a speaker; the question's rare word picks
    the line, and the reply after it is in the snippet before the line above."""
    lines = [f"- **{'Ann' if i % 2 else 'Bo'}**: line {i:02d} " + "talk " * 20 for i in range(20)]
    lines[9] = "- **Bo**: Ann, which pottery class did you take? " + "talk " * 14
    lines[10] = "- **Ann**: The Tuesday one at the studio downtown. " + "talk " * 13
    text = "\n".join(lines)
    size = len(lines[9]) + len(lines[10]) + len(lines[11]) + len(lines[8]) + 3
    snip, a, b, best = make_snippet(text, 1, parse_query("Ann pottery class"), size)
    assert best == 10  # line 9 (1-based 10): "pottery class", not every "Ann" line
    assert (a, b) == (9, 12)  # one line above, two below
    assert "Tuesday" in snip


def test_bad_params_are_clear_errors(logs: Config) -> None:
    with AgentIndex(logs) as idx:
        idx.sync()
        for kwargs in (
            {"max_results": "3"},
            {"max_results": 0},
            {"min_score": 2},
            {"sources": ["elsewhere"]},
        ):
            with pytest.raises(InvalidParams):
                idx.search("garden", **kwargs)
        with pytest.raises(InvalidParams):
            idx.search("   ")
        # FTS5 syntax characters in a query are just text.
        for q in ("AND OR NOT", '"unbalanced', "a*b^c", "NEAR(x y)", "col:val", "(((", "-x"):
            idx.search(q, min_score=0)


def test_parse_query() -> None:
    q = parse_query('the "flat white" KESTREL-0429 and src/app.py please?')
    assert q.required == (("flat", "white"),)
    assert "kestrel-0429" in q.exact and "src/app.py" in q.exact
    assert "the" not in q.terms and "please" in q.terms
    assert parse_query("東京タワー").cjk == ("東京", "京タ", "タワ", "ワー")


def test_min_score_judges_each_side_on_its_own_scale() -> None:
    from types import SimpleNamespace

    from indexer.search.candidates import Candidate, ChunkRows
    from indexer.search.stages.final import Floor
    from indexer.store import SearchRow

    def row(i: int, text: str) -> SearchRow:
        return SearchRow(i, f"memory/{i}.md", "memory", 1, 1, "", text, 0.0)

    known = [row(1, "gateway reboot notes"), row(2, "the host restarted"), row(3, "tomatoes")]
    ctx = SimpleNamespace(
        floor=0.35,
        q=parse_query("gateway reboot"),
        rows=ChunkRows(None, known),  # type: ignore[arg-type]  # every row known
    )
    hits = [
        Candidate(1, "memory", -4.0, 0.8, 0.8, False, True),
        # ranked at 0.27 by the weighting, but a cosine of 0.9 is strong on its own
        Candidate(2, "memory", 0.0, 0.27, vector_score=0.9, vector_relevance=0.9),
        Candidate(3, "memory", 0.0, 0.03, vector_score=0.1, vector_relevance=0.1),
        # weak on both sides but holding every word
        Candidate(4, "memory", -0.1, 0.02, 0.09, classified=False),
    ]
    known.append(row(4, "gateway reboot, once"))
    ctx.rows = ChunkRows(None, known)  # type: ignore[arg-type]
    out = Floor()(ctx, hits)  # type: ignore[arg-type]
    assert [h.id for h in out] == [1, 2, 4]
    assert [h.score for h in out] == [0.8, 0.35, 0.35]  # kept below the floor: at it
    assert out[1].parts["floor"] == "its own match reaches minScore"
    assert out[2].parts["floor"] == "every query word"


def _best_line_by_lines(text: str, query: str) -> int:
    """The snippet's line, by definition: each line scored on its own (a needle
    counts twice, a stem where a word starts with it, each item times
    log(1 + lines / lines holding it)); the first of equals."""
    q = parse_query(query)
    lows = [line.lower() for line in text.split("\n")]

    def holds_stem(low: str, p: str) -> bool:
        return any(
            low.startswith(p, k) and (k == 0 or not low[k - 1].isalnum()) for k in range(len(low))
        )

    items = (
        [(2, lambda low, n=n: n in low) for n in q.needles]
        + [(1, lambda low, p=p: holds_stem(low, p)) for p in q.stems]
        + [(1, lambda low, g=g: g in low) for g in q.cjk]
    )
    scores = [0.0] * len(lows)
    for weight, holds in items:
        held = [i for i, low in enumerate(lows) if holds(low)]
        for i in held:
            scores[i] += weight * math.log(1 + len(lows) / len(held))
    top = max(scores)
    return -1 if top == 0 else next(i for i, s in enumerate(scores) if s >= top - 1e-9)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.lists(
            st.sampled_from(
                [
                    "gateway",
                    "Gateways",
                    "host",
                    "x-ray",
                    "KESTREL-0429",
                    "re-run",
                    "東京",
                    "the",
                    "ate",
                    "Ünïcode",
                    "i̇stanbul",
                    "-",
                    "  ",
                ]
            ),
            max_size=8,
        ).map(" ".join),
        min_size=1,
        max_size=12,
    ),
    query=st.sampled_from(
        [
            "gateway host",
            "KESTREL-0429 gateway",
            '"re run" host',
            "東京 gateway",
            "unicode",
            "istanbul",
            "ate",
        ]
    ),
)
def test_snippet_line_is_the_best_line(lines: list[str], query: str) -> None:
    text = "\n".join(lines)
    want = _best_line_by_lines(text, query)
    _, _, _, best = make_snippet(text, 1, parse_query(query), 10_000)
    first_nonblank = next((i for i, ln in enumerate(lines) if ln.strip()), 0)
    assert best - 1 == (want if want >= 0 else first_nonblank)


def test_snippets_start_and_end_on_text() -> None:
    text = "\n\n\n- the heron nests by the pond\n\n\n- the otter swims\n\n"
    snippet, first, last, best = make_snippet(text, 10, parse_query("heron"), 700)
    assert snippet.split("\n")[0] == "- the heron nests by the pond" and first == 13 == best
    assert snippet.split("\n")[-1] == "- the otter swims" and last == 16


def test_an_id_that_nothing_holds_finds_nothing(logs: Config) -> None:
    """A query made only of exact tokens that no chunk holds: no results (a word of
    it shared with other text, or a vector neighbour, is noise), and why."""
    with AgentIndex(logs) as idx:
        idx.sync()
        res = idx.search("CANARY-9001", min_score=0)
        assert res["results"] == [] and res["abstained"] == "no memory contains canary-9001"
        assert idx.search("KESTREL-0429")["results"]  # one that is held: found as before
        words = idx.search("routine garden canary-9001", min_score=0)  # words: searched
        assert words["results"] and "abstained" not in words
