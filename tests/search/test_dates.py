"""Time a query names: which windows of days are read from it (search/query/when.py),
against the question's date, and what is dated inside them: listed when the query
is only time, ranked first when it has other words."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path

import pytest
from conftest import write

from indexer.config import Config, QueryConfig
from indexer.config.file import ConfigError, load_config
from indexer.engine import AgentIndex
from indexer.errors import InvalidParams
from indexer.search.candidates import Candidate
from indexer.search.query.when import read_time, today_of
from indexer.search.stages.time import window_order

TODAY = date(2026, 11, 27)  # a Friday
AS_OF = "2026-11-27T09:00:00+00:00"


@pytest.mark.parametrize(
    ("text", "windows"),
    [
        # Absolute: a day, a month, a year; a date with no year is the latest one.
        ("What did we decide in March 2026?", [("2026-03-01", "2026-03-31")]),
        ("Who came to dinner on May 3, 2023?", [("2023-05-03", "2023-05-03")]),
        ("the movie we watched on 1 May, 2022", [("2022-05-01", "2022-05-01")]),
        ("meeting on Sept. 5th 2021", [("2021-09-05", "2021-09-05")]),
        ("dec 2020 notes", [("2020-12-01", "2020-12-31")]),
        ("the 3rd of March", [("2026-03-03", "2026-03-03")]),
        ("Which beach did we visit in June?", [("2026-06-01", "2026-06-30")]),
        ("plans for mid-July", [("2026-07-01", "2026-07-31")]),
        ("what happened in December", [("2025-12-01", "2025-12-31")]),
        ("Oct 31st", [("2026-10-31", "2026-10-31")]),
        ("October 31", [("2026-10-31", "2026-10-31")]),
        ("what changed in 2024 and on 2025-11-03",
         [("2024-01-01", "2024-12-31"), ("2025-11-03", "2025-11-03")]),
        ("logs from 2025-11 and 2025-11", [("2025-11-01", "2025-11-30")]),
        # Relative, to Friday 2026-11-27.
        ("What did I do yesterday?", [("2026-11-26", "2026-11-26")]),
        ("the day before yesterday", [("2026-11-25", "2026-11-25")]),
        ("what did I say this morning", [("2026-11-27", "2026-11-27")]),
        ("what did we decide about the database last week?", [("2026-11-16", "2026-11-22")]),
        ("earlier this week", [("2026-11-23", "2026-11-27")]),
        ("last month", [("2026-10-01", "2026-10-31")]),
        ("3 days ago", [("2026-11-23", "2026-11-25")]),
        ("two weeks ago", [("2026-11-09", "2026-11-15")]),
        ("last Monday", [("2026-11-23", "2026-11-23")]),
        ("what did we do on Friday", [("2026-11-27", "2026-11-27")]),
        ("What were we up to the Saturday before last?", [("2026-11-14", "2026-11-14")]),
        ("the week before last", [("2026-11-09", "2026-11-15")]),
        ("last Friday", [("2026-11-20", "2026-11-20")]),
        ("over the weekend", [("2026-11-21", "2026-11-22")]),
        ("in the past two weeks", [("2026-11-13", "2026-11-27")]),
        ("what came up recently", [("2026-11-13", "2026-11-27")]),
        ("last year", [("2025-01-01", "2025-12-31")]),
        # Words and names, not dates; the future is not in memory.
        ("May I ask what we decided?", []),
        ("we may go hiking", []),
        ("the march was long", []),
        ("What did June say about the trip?", []),
        ("Ask Jan about the budget", []),
        ("what's on next Monday", []),
        # A date after the question's is no window, and its year is not read alone.
        ("What did Tim plan for December 2026?", []),
        ("What did Tim say on November 30, 2026?", []),
        ("What did Tim say on November 6, 2026?", [("2026-11-06", "2026-11-06")]),
        ("Can you ping me on Saturday about the deploy?", []),  # a request, not the past
        ("the coming weekend", []),
        ("version 2.2019 build", []),
        ("the 2020s", []),
        ("port 80, pid 12345", []),
        ("a timer set to -3 days ago", []),  # a negative count is no time
        # Words, not months or weekdays; IDs and file names that hold a date.
        ("this may be the cause of the replica lag", []),
        ("I plan to march", []),
        ("step 3 may fail", []),
        ("what's planned for sunday?", []),
        ("Alfred's plan for friday", []),
        ("what are we doing this weekend?", []),  # asked on a Friday: the coming one
        ("OPS-2026-11-03", []),
        ("backup-2026-11-03.tar.gz", []),
        ("release-2026-11 notes", []),
        # Letters that only look like ASCII under case folding ("APRİL", "ſ").
        ("replica lag APR\u0130L 5", []),
        ("aug\u017ft 3", []),
        ("what did I do on feb 29th", [("2024-02-29", "2024-02-29")]),
        # The longest query a request may carry, dates everywhere: read once each.
        ("in May " * 1400, [("2026-05-01", "2026-05-31")]),
        ("x" * 9990 + " May", []),
    ],
)  # fmt: skip
def test_time_words_read_as_windows(text: str, windows: list[tuple[str, str]]) -> None:
    got = read_time(text, TODAY).windows
    assert [(w.first.isoformat(), w.last.isoformat()) for w in got] == windows


def test_time_words_are_not_searched() -> None:
    assert read_time("What did I do yesterday?", TODAY).rest == "What did I do ?"
    assert read_time("database last week", TODAY).rest == "database"
    # A year is also a port, a model, a version: searched as well as read.
    assert read_time("port 2020 open", TODAY).rest == "port 2020 open"


def test_a_future_date_is_searched_as_words() -> None:
    assert read_time("plans for December 2026", TODAY).rest == "plans for December 2026"


def test_recently_prefers_the_newer_without_an_edge() -> None:
    (w,) = read_time("what did I paint recently", TODAY).windows
    assert w.soft
    assert w.weight(TODAY) == 1.0
    assert w.weight(date(2026, 11, 13)) == pytest.approx(0.5)  # two weeks older: half
    assert w.weight(date(2026, 10, 30)) == pytest.approx(0.25)
    assert w.weight(date(2026, 11, 28)) == 0.0


def test_window_chunks_go_after_the_hits_that_score_as_much() -> None:
    def c(cid: int, score: float, rank: float = 0.0, dated: bool = False) -> Candidate:
        parts = {"dateBoost": 1.5} if dated else {}
        return Candidate(cid, "memory", rank, score, parts=parts)

    extra = [c(9, 0.5), c(8, 0.5)]
    # The window's chunks outrank hits scoring less than they do, in their own order.
    weak = [c(1, 0.45), c(2, 0.44)]
    assert [h.id for h in window_order(weak, extra)] == [9, 8, 1, 2]
    strong = [c(1, 0.75), c(2, 0.44)]
    got = window_order(strong, extra)
    assert [h.id for h in got] == [1, 9, 8, 2]
    assert [h.score for h in got] == [0.75, 0.5, 0.5, 0.44]
    # Dated in the window: with a word of the query (a keyword rank) first, whatever
    # scores above it, and ranked as the first; found only by its meaning, just above
    # the window's chunks.
    words = c(3, 0.40, rank=-1.2, dated=True)
    meaning = c(4, 0.39, dated=True)
    got = window_order([*strong, words, meaning], extra)
    assert [h.id for h in got] == [3, 1, 4, 9, 8, 2]
    assert [h.score for h in got] == [0.75, 0.75, 0.5, 0.5, 0.5, 0.44]


def test_the_question_date_is_in_the_users_zone() -> None:
    late = datetime.fromisoformat("2026-11-27T23:30:00-08:00")  # 07:30 UTC the 28th
    assert today_of(late, None)[0] == date(2026, 11, 27)
    assert today_of(late, "Europe/Lisbon")[0] == date(2026, 11, 28)
    naive = datetime(2026, 11, 27, 23, 30)
    assert today_of(naive, "Asia/Tokyo")[0] == date(2026, 11, 27)


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


def _paths(idx: AgentIndex, query: str, **kw: object) -> list[str]:
    return [r["path"] for r in idx.search(query, min_score=0.0, **kw)["results"]]  # type: ignore[arg-type]


def test_logs_dated_in_the_named_month_rank_first(logs: Config) -> None:
    with AgentIndex(logs) as idx:
        idx.sync()
        plain = _paths(idx, "team offsite", as_of=AS_OF)
        assert plain[0] == "memory/2026-02-10.md"  # words alone
        dated = _paths(idx, "team offsite in March", as_of=AS_OF)
        assert dated[0] == "memory/2026-03-12.md"
        assert _paths(idx, "team offsite in March 2025", as_of=AS_OF)[0] == "memory/2026-02-10.md"
        assert _paths(idx, "team offsite in 2026-03", as_of=AS_OF)[0] == "memory/2026-03-12.md"
        # Asked in February 2027, "in March" is March 2026 still (the latest one).
        assert _paths(idx, "team offsite in March", as_of="2027-02-01")[0] == (
            "memory/2026-03-12.md"
        )
        res = idx.search("team offsite in March", min_score=0.0, explain=True, as_of=AS_OF)
        assert res["time"] == [{"said": "March", "from": "2026-03-01", "to": "2026-03-31"}]
        assert res["explain"]["dateBoost"] == 0.5 and res["explain"]["asOf"] == "2026-11-27"
        first = res["results"][0]
        assert first["explain"]["dateBoost"] == 1.5
        # Boosted: it scores 1.5 times its words' score
        assert first["score"] == pytest.approx(1.5 * first["textScore"], abs=1e-3)
        # and (with a word of the query, in a window of a month or less) ranks above
        # every hit outside it, scoring at least as the best of them.
        assert first["explain"]["windowFill"] == "in the time, with a word of the query"
        scores = [r["score"] for r in res["results"]]
        assert scores == sorted(scores, reverse=True)
        # Only dated chunks: MEMORY.md and files outside memory/ never are.
        assert all("dateBoost" not in r["explain"] for r in res["results"][1:])
    off = replace(logs, query=QueryConfig(dateBoost=0.0))
    with AgentIndex(off) as idx:
        assert _paths(idx, "team offsite in March", as_of=AS_OF)[0] == "memory/2026-02-10.md"
        assert "time" not in idx.search("team offsite in March", as_of=AS_OF)


def _message(role: str, text: str, at: str) -> str:
    return json.dumps({"type": "message", "timestamp": at, "message": {"role": role,
                       "content": [{"type": "text", "text": text}]}})  # fmt: skip


@pytest.fixture
def days(tmp_path: Path) -> Config:
    """Three days of logs and a transcript across two of them (times in UTC)."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- The database is PostgreSQL 16.\n")
    write(ws, "memory/2026-11-18.md", "# 2026-11-18\n\n- Decided: move the billing "
          "database to Postgres 16 after the freeze.\n")  # fmt: skip
    write(ws, "memory/2026-11-25.md", "# 2026-11-25\n\n- Database database database: "
          "the replica lag alert fired again.\n")  # fmt: skip
    write(ws, "memory/2026-11-26.md", "# 2026-11-26\n\n- Walked Juniper at 07:00.\n"
          "- Fixed the garden gate.\n")  # fmt: skip
    sessions = tmp_path / "sessions"
    write(sessions, "s1.jsonl", "\n".join([
        _message("user", "Book the vet for Juniper's booster shot.", "2026-11-20T10:00:00Z"),
        _message("assistant", "Booked: Tuesday 09:15.", "2026-11-20T10:00:05Z"),
    ]) + "\n")  # fmt: skip
    write(sessions, "s2.jsonl", "\n".join([
        _message("user", "Remind me to call the plumber about the boiler.",
                 "2026-11-26T18:30:00Z"),
        _message("assistant", "Reminder set for Friday.", "2026-11-26T18:30:04Z"),
        # a clock running ahead: the chunk is dated by the messages before it
        _message("assistant", "(from a host whose clock is wrong)", "2099-01-01T00:00:00Z"),
    ]) + "\n")  # fmt: skip
    from indexer.config import SessionsConfig

    return Config(
        workspace=ws,
        indexPath=tmp_path / "i.sqlite",
        sessions=SessionsConfig(dir=str(sessions)),
    )


def test_a_question_of_only_time_lists_that_time_newest_first(days: Config) -> None:
    with AgentIndex(days) as idx:
        idx.sync()
        res = idx.search("What did I do yesterday?", as_of=AS_OF, time_zone="UTC")
        assert res["time"] == [{"said": "yesterday", "from": "2026-11-26", "to": "2026-11-26"}]
        got = [r["path"] for r in res["results"]]
        assert got == ["memory/2026-11-26.md", "sessions/s2.jsonl"], got
        assert all(r["score"] == 1.0 for r in res["results"])
        # A week: newest day first; the day's log before its transcripts.
        week = idx.search("what happened last week", as_of=AS_OF, time_zone="UTC")["results"]
        assert [r["path"] for r in week] == ["sessions/s1.jsonl", "memory/2026-11-18.md"]
        # Only transcripts, when only they are asked for.
        only = idx.search("yesterday", as_of=AS_OF, sources=["sessions"], time_zone="UTC")
        assert [r["path"] for r in only["results"]] == ["sessions/s2.jsonl"]
        # The day a message belongs to is the user's: 18:30 UTC on the 26th is the
        # 27th in Tokyo, so "yesterday" there (the 26th) holds no transcript.
        tokyo = idx.search("yesterday", as_of=AS_OF, time_zone="Asia/Tokyo")["results"]
        assert [r["path"] for r in tokyo] == ["memory/2026-11-26.md"]
        # Nothing dated then: nothing, not the whole memory.
        assert idx.search("what did I do on 2026-01-05", as_of=AS_OF)["results"] == []


def _one_transcript(tmp_path: Path, messages: list[str]) -> Config:
    """A workspace with nothing dated and one transcript of ``messages``, days in UTC."""
    from indexer.config import QueryConfig, SessionsConfig

    ws, sessions = tmp_path / "ws", tmp_path / "sessions"
    write(ws, "MEMORY.md", "# Memory\n\n- nothing dated here\n")
    write(sessions, "s.jsonl", "\n".join(messages) + "\n")
    return Config(
        workspace=ws,
        indexPath=tmp_path / "i.sqlite",
        sessions=SessionsConfig(dir=str(sessions)),
        query=QueryConfig(timeZone="UTC"),
    )


def test_a_conversation_across_midnight_is_found_by_either_day(tmp_path: Path) -> None:
    """A chunk is dated by its newest message: one that ran from a late evening into
    the next morning was found by the later day only. A chunk holds one day's
    messages now."""
    cfg = _one_transcript(tmp_path, [
        _message("user", "Late thought: the kayak needs a new rudder.", "2026-11-24T23:50:00Z"),
        _message("assistant", "Noted the rudder.", "2026-11-24T23:50:05Z"),
        _message("user", "Morning: book the dentist for Ivy.", "2026-11-25T08:10:00Z"),
    ])  # fmt: skip
    with AgentIndex(cfg) as idx:
        idx.sync()
        for day, said in (("2026-11-24", "rudder"), ("2026-11-25", "dentist")):
            res = idx.search(f"what did we talk about on {day}", as_of=AS_OF, time_zone="UTC")
            got = [r["snippet"] for r in res["results"]]
            assert len(got) == 1 and said in got[0], (day, got)


def test_a_topic_in_a_named_time_ranks_that_time_first(days: Config) -> None:
    with AgentIndex(days) as idx:
        idx.sync()
        assert _paths(idx, "the database", as_of=AS_OF)[0] == "memory/2026-11-25.md"  # words
        q = "what about the database last week"
        res = idx.search(q, as_of=AS_OF, min_score=0.0, explain=True)
        assert res["results"][0]["path"] == "memory/2026-11-18.md"
        assert res["results"][0]["explain"]["dateBoost"] == 1.5
        # What the day holds is shown after what holds the words: its log answers
        # "which errands did I run yesterday" though none of those words is in it.
        day = idx.search("which errands did I run yesterday", as_of=AS_OF, time_zone="UTC")
        assert [r["path"] for r in day["results"]][:2] == [
            "memory/2026-11-26.md", "sessions/s2.jsonl"
        ]  # fmt: skip
        assert day["results"][0]["score"] == 0.5  # the time matches, not the words
        # A transcript is dated by its messages.
        vet = idx.search("the vet last week", as_of=AS_OF, explain=True)["results"]
        assert vet[0]["path"] == "sessions/s1.jsonl" and vet[0]["explain"]["dateBoost"] == 1.5


def test_a_time_memory_holds_no_day_of_is_searched_as_words(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- We moved here from Lisbon 4 years ago.\n")
    write(ws, "memory/2026-11-20.md", "# 2026-11-20\n\n- Sorted the photos of the move.\n")
    cfg = Config(workspace=ws, indexPath=tmp_path / "i.sqlite")
    with AgentIndex(cfg) as idx:
        idx.sync()
        res = idx.search("where did we move from 4 years ago", as_of=AS_OF, min_score=0.0)
        assert "time" not in res  # no day of 2022 is in memory
        assert res["results"][0]["path"] == "MEMORY.md"
        # A window that holds a day stays one.
        last = idx.search("the move last week", as_of=AS_OF, min_score=0.0)
        assert last["time"][0]["said"] == "last week"
        assert last["results"][0]["path"] == "memory/2026-11-20.md"


def test_as_of_and_time_zone_are_checked(days: Config, tmp_path: Path) -> None:
    with AgentIndex(days) as idx:
        with pytest.raises(InvalidParams, match="asOf"):
            idx.search("yesterday", as_of="last tuesday")
        for far in ("0001-01-01", "9999-12-31T23:00:00-05:00"):
            with pytest.raises(InvalidParams, match="asOf"):
                idx.search("yesterday", as_of=far)
        with pytest.raises(InvalidParams, match="timeZone"):
            idx.search("yesterday", time_zone="Mars/Olympus")
    f = tmp_path / "memindex.toml"
    f.write_text('[query]\ntimeZone = "Mars/Olympus"\n')
    with pytest.raises(ConfigError, match="query.timeZone"):
        load_config(f)
    f.write_text('[query]\ntimeZone = "America/Chicago"\n')
    assert load_config(f).query.timeZone == "America/Chicago"


def test_date_boost_is_checked_in_the_config_file(tmp_path: Path) -> None:
    f = tmp_path / "memindex.toml"
    f.write_text("[query]\ndateBoost = 1.5\n")
    assert load_config(f).query.dateBoost == 1.5
    f.write_text("[query]\ndateBoost = -1\n")
    with pytest.raises(ConfigError, match="dateBoost"):
        load_config(f)


@pytest.mark.slow
def test_a_topic_in_a_named_time_is_found_when_its_words_are_common(
    tmp_path: Path, model_path: Path
) -> None:
    """Hybrid, on the personal dev set's workspace (bench/personal): "What came up at
    standup two days ago?" The day's log holds "standup" once among other news, while
    ten other logs hold "standup" and "came" / "up" more strongly. The candidate lists
    go deeper for a topic within a named time, and a hit dated in the window that
    holds a word of the question ranks first: the day's log is the first result."""
    import shutil

    from providers.local_gguf import LocalGGUFProvider

    ws = tmp_path / "ws"
    shutil.copytree(Path(__file__).resolve().parents[2] / "bench/personal/workspace", ws)
    cfg = Config(workspace=ws, extraPaths=(), indexPath=tmp_path / "i.sqlite")
    provider = LocalGGUFProvider(model_path)
    try:
        with AgentIndex(cfg, provider=provider) as idx:
            idx.sync()
            q = "What came up at standup two days ago?"
            got = _paths(idx, q, as_of=AS_OF, max_results=6, time_zone="UTC", mode="hybrid")
            assert got[0] == "memory/2026-11-25.md", got
    finally:
        provider.close()


@pytest.fixture
def ticket(tmp_path: Path) -> Config:
    """A ticket introduced in one log and named again, shorter, in two later ones."""
    ws = tmp_path / "ws"
    write(
        ws,
        "memory/2026-03-02.md",
        "# 2026-03-02\n\n- New ticket OPS-7: the nightly export to the data lake fails "
        "when the bucket quota is hit; it needs a root cause and an alert.\n",
    )
    write(ws, "memory/2026-03-09.md", "# 2026-03-09\n\n- OPS-7 again.\n")
    write(ws, "memory/2026-03-16.md", "# 2026-03-16\n\n- OPS-7: quota setting raised; closed.\n")
    return Config(workspace=ws, extraPaths=(), indexPath=tmp_path / "i.sqlite")


def test_an_id_asked_about_alone_finds_its_first_mention_first(ticket: Config) -> None:
    """firstMention (off by default: it carried to no set it was not made on)."""
    on = {"firstMention": True}
    with AgentIndex(ticket) as idx:
        idx.sync()
        res = idx.search("What's OPS-7 about?", min_score=0.0, explain=True, as_of=AS_OF, stages=on)
        first = res["results"][0]
        assert first["path"] == "memory/2026-03-02.md"
        assert first["explain"]["firstMention"] == "2026-03-02"  # moved up: words alone put
        assert res["results"][1]["path"] == "memory/2026-03-09.md"  # the shortest first
        # Another word that tells the notes apart, or one asking for the newest state,
        # and nothing moves.
        assert _paths(idx, "Which setting closed OPS-7?", as_of=AS_OF, stages=on)[0] == (
            "memory/2026-03-16.md"
        )
        status = idx.search("What's the status of OPS-7?", min_score=0.0, explain=True, stages=on)
        assert all("firstMention" not in r["explain"] for r in status["results"])
        # A word that asks the assistant ("remind") tells no note apart, though a
        # note holds "Reminder".
        write(ticket.workspace, "memory/2026-03-20.md", "# 2026-03-20\n\n- Reminder: OPS-7.\n")
        idx.sync()
        assert (
            _paths(idx, "Remind me what OPS-7 is.", as_of=AS_OF, stages=on)[0]
            == "memory/2026-03-02.md"
        )


def test_a_new_time_zone_cuts_the_transcripts_again(tmp_path: Path) -> None:
    """Where a transcript chunk's day ends is the configured zone's: changing it
    rebuilds the index (it kept chunks cut in the old zone until a forced rebuild)."""
    from dataclasses import replace

    from indexer.config import QueryConfig

    utc = _one_transcript(tmp_path, [
        _message("user", "Early: the kayak rudder arrived.", "2026-11-26T07:30:00Z"),
        _message("user", "Later: the dentist moved to Friday.", "2026-11-26T08:30:00Z"),
    ])  # fmt: skip
    with AgentIndex(utc) as idx:
        idx.sync()
    la = replace(utc, query=QueryConfig(timeZone="America/Los_Angeles"))
    with AgentIndex(la) as idx:
        report = idx.sync()
        assert report.rebuilt  # the zone is part of what the rows depend on
        got = idx.search(
            "what happened on 2026-11-25", as_of=AS_OF, time_zone="America/Los_Angeles"
        )
        assert [r["snippet"] for r in got["results"]] and "rudder" in got["results"][0]["snippet"]
