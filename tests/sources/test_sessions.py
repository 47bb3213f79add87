from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from daemon_util import wait_for

from indexer.api import GetRequest
from indexer.config import Config, SessionsConfig
from indexer.engine import AgentIndex
from indexer.indexing.transcripts import session_sync
from indexer.indexing.transcripts.source import Change, Listing, Piece, SyncRun, Transcript
from indexer.sources.transcripts.line_reads import MAX_LINE_BYTES
from indexer.sources.transcripts.messages import Messages
from indexer.sources.transcripts.sessions import parse_message, redact
from indexer.store import FileState, SessionCursor


def msg(role: str, text: str, nested: bool = False) -> str:
    if nested:
        return json.dumps(
            {
                "type": "message",
                "message": {"role": role, "content": [{"type": "text", "text": text}]},
            }
        )
    return json.dumps({"type": "message", "role": role, "content": text})


@pytest.fixture
def sess(cfg: Config, tmp_path: Path) -> tuple[Config, Path]:
    d = tmp_path / "sessions"
    d.mkdir()
    c = replace(
        cfg,
        sessions=SessionsConfig(
            dir=str(d), deltaBytes=100_000, deltaMessages=50, idleFlushMs=3_600_000
        ),
    )
    return c, d


def append(path: Path, *lines: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        for ln in lines:
            fh.write(ln + "\n")


def rows(idx: AgentIndex, path: str) -> list[tuple[int, int, str]]:
    return [
        (int(a), int(b), str(t))
        for a, b, t in idx.store.db.execute(
            "SELECT start_line, end_line, text FROM chunks WHERE path=? ORDER BY start_line",
            (path,),
        )
    ]


def test_parse_shapes_noise_and_redaction() -> None:
    assert (
        parse_message(msg("user", "hello  there\nfriend").encode()).render()
        == "User: hello there friend"
    )  # type: ignore[union-attr]
    nested = parse_message(msg("assistant", "nested text", nested=True).encode())
    assert nested is not None and nested.render() == "Assistant: nested text"
    for noise in ("", "NO_REPLY", "HEARTBEAT_OK", "ok", "OK."):
        assert parse_message(msg("assistant", noise).encode()) is None
    assert parse_message(json.dumps({"type": "tool", "role": "user"}).encode()) is None
    assert (
        parse_message(json.dumps({"type": "message", "role": "system", "content": "x"}).encode())
        is None
    )
    secret = (
        "key sk-proj-abcdefghijklmnop1234 and Bearer abcdef123456789xyz and "
        "https://bob:hunter2pass@example.com and password=swordfish ghp_" + "a" * 30
    )
    out = redact(secret)
    for leaked in (
        "abcdefghijklmnop1234",
        "abcdef123456789xyz",
        "hunter2pass",
        "swordfish",
        "a" * 30,
    ):
        assert leaked not in out
    assert "https://bob:[REDACTED]@example.com" in out and "Bearer [REDACTED]" in out


def test_backfill_citations_and_get(sess: tuple[Config, Path]) -> None:
    cfg, d = sess
    f = d / "s1.jsonl"
    append(
        f,
        json.dumps({"type": "session", "id": "x"}),
        msg("user", "Where did we put the restic password file?"),
        "{not json",
        msg("assistant", "It is in ~/.config/restic/pass, token=supersecretvalue", nested=True),
        "",
        msg("user", "thanks"),
    )
    with AgentIndex(cfg) as idx:
        rep = idx.sync()
        assert rep.sessions["messages"] == 3 and rep.sessions["malformed"] == 1
        res = idx.search("restic password file", sources=["sessions"])["results"]
        assert res[0]["path"] == "sessions/s1.jsonl" and res[0]["source"] == "sessions"
        assert (res[0]["startLine"], res[0]["endLine"]) == (2, 6)  # JSONL line numbers
        assert "supersecretvalue" not in json.dumps(res)
        hits = idx.store.db.execute("SELECT count(*) FROM chunks WHERE text LIKE '%supersecret%'")
        assert hits.fetchone()[0] == 0
        got = idx.get("sessions/s1.jsonl", start=4, lines=1)
        assert "restic/pass" in got["text"] and "supersecretvalue" not in got["text"]
        assert idx.status()["malformedLines"] == 1
        for bad in ("sessions/../MEMORY.md", "sessions/x.txt", "sessions/sub/a.jsonl"):
            with pytest.raises(Exception, match="refused"):
                idx.get(bad)


def test_growth_partial_lines_and_thresholds(sess: tuple[Config, Path]) -> None:
    cfg, d = sess
    f = d / "s.jsonl"
    append(f, *[msg("user", f"early message {i}") for i in range(5)])
    with AgentIndex(cfg) as idx:
        idx.sync()
        # A partial last line waits for its newline.
        with f.open("a") as fh:
            fh.write(msg("assistant", "zebra crossing half")[:20])
        rep = idx.sync_sessions(due_only=False)
        assert rep.messages == 0
        with f.open("a") as fh:
            fh.write(msg("assistant", "zebra crossing half")[20:] + "\n")
        rep = idx.sync_sessions(due_only=False)
        assert rep.messages == 1
        assert idx.search("zebra crossing")["results"][0]["startLine"] == 6
        # Below the thresholds the watcher defers; past 50 messages it indexes.
        append(f, *[msg("user", f"batch one item {i} walrus") for i in range(10)])
        rep = idx.sync_sessions(due_only=True)
        assert rep.deferred == 1 and rep.messages == 0
        append(f, *[msg("user", f"batch two item {i} walrus") for i in range(45)])
        rep = idx.sync_sessions(due_only=True)
        assert rep.messages == 55
        lines = [r[:2] for r in rows(idx, "sessions/s.jsonl")]
        covered = {n for a, b in lines for n in range(a, b + 1)}
        assert set(range(1, 62)) <= covered  # every message line is in a chunk


def test_idle_flush(sess: tuple[Config, Path]) -> None:
    cfg, d = sess
    """A small delta is indexed once it has been quiet for idleFlushMs as the writer
    saw it: the first look starts the count (an mtime in the past does not vouch)."""
    cfg = replace(cfg, sessions=replace(cfg.sessions, idleFlushMs=50))
    f = d / "s.jsonl"
    append(f, msg("user", "a single quiet message about otters"))
    old = time.time() - 5
    os.utime(f, (old, old))
    with AgentIndex(cfg) as idx:
        first = idx.sync_sessions(due_only=True)
        assert first.messages == 0 and first.deferred == 1
        wait_for(lambda: idx.sync_sessions(due_only=True).messages == 1, timeout=10)


def test_a_tail_goes_when_its_file_is_emptied(sess: tuple[Config, Path]) -> None:
    """A message searchable as an uncommitted tail is gone once the file is emptied
    (the user removed it), as committed lines are."""
    cfg, d = sess
    cfg = replace(cfg, sessions=replace(cfg.sessions, idleFlushMs=3_600_000))
    f = d / "s.jsonl"
    with AgentIndex(cfg) as idx:
        idx.sync()
        append(f, msg("user", "secret plan zebra"))
        assert idx.sync_sessions(due_only=True).tails == 1
        assert idx.search("zebra")["results"]
        f.write_bytes(b"")
        idx.sync_sessions(due_only=True)
        assert idx.search("zebra", min_score=0)["results"] == []
        # Emptied while no daemon watched (a new writer remembers no tail).
        append(f, msg("user", "secret plan yak"))
        assert idx.sync_sessions(due_only=True).tails == 1
    f.write_bytes(b"")
    with AgentIndex(cfg) as idx:
        idx.sync_sessions(due_only=True)
        assert idx.search("yak", min_score=0)["results"] == []


def test_truncation_and_replacement(sess: tuple[Config, Path]) -> None:
    cfg, d = sess
    f = d / "s.jsonl"
    append(f, *[msg("user", f"original content {i} giraffe") for i in range(5)])
    with AgentIndex(cfg) as idx:
        idx.sync()
        f.write_text(msg("user", "fresh start penguin") + "\n")  # truncated in place
        rep = idx.sync_sessions(due_only=False)
        assert rep.restarted == 1
        assert idx.search("giraffe", min_score=0)["results"] == []
        assert idx.search("penguin")["results"][0]["startLine"] == 1


def test_rotation_keeps_rows_and_reads_the_unread_tail(sess: tuple[Config, Path]) -> None:
    cfg, d = sess
    f = d / "main.jsonl"
    append(f, *[msg("user", f"before rotation {i} koala") for i in range(3)])
    with AgentIndex(cfg) as idx:
        idx.sync()
        append(f, msg("assistant", "unread tail message about a narwhal"))
        rotated = d / "main.jsonl.reset.2026-11-21T10-00-00"
        f.rename(rotated)
        append(f, msg("user", "new session begins with a platypus"))
        rep = idx.sync_sessions(due_only=False)
        assert rep.rotated == 1
        tail = idx.search("narwhal")["results"]
        assert tail[0]["path"] == "sessions/" + rotated.name and tail[0]["startLine"] == 4
        assert idx.search("koala")["results"][0]["path"] == "sessions/" + rotated.name
        assert idx.search("platypus")["results"][0]["path"] == "sessions/main.jsonl"
        # No duplicates: every JSONL line of each file is indexed once.
        n = idx.store.db.execute("SELECT count(*) FROM chunks WHERE text LIKE '%koala%'")
        assert n.fetchone()[0] == 1
        # Deleting the rotated file drops its rows.
        rotated.unlink()
        idx.sync_sessions(due_only=False)
        assert idx.search("koala", min_score=0)["results"] == []


def test_kill_between_deltas_converges(sess: tuple[Config, Path], tmp_path: Path) -> None:
    cfg, d = sess
    f = d / "s.jsonl"
    append(f, *[msg("user", f"message {i} lemur") for i in range(20)])
    with AgentIndex(cfg) as idx:
        idx.sync()
        append(f, *[msg("user", f"more {i} lemur") for i in range(20)])
        idx.sync_sessions(due_only=False)
        a = rows(idx, "sessions/s.jsonl")
    clean = replace(cfg, indexPath=tmp_path / "clean.sqlite")
    with AgentIndex(clean) as idx:
        idx.sync()
        b = rows(idx, "sessions/s.jsonl")
    covered_a = {n for s, e, _ in a for n in range(s, e + 1)}
    covered_b = {n for s, e, _ in b for n in range(s, e + 1)}
    assert covered_a == covered_b == set(range(1, 41))


def test_snippet_lines_are_the_transcripts_across_skipped_lines(
    sess: tuple[Config, Path], workspace: Path
) -> None:
    """A transcript chunk's text skips malformed, noise and non-message lines, so its
    text line k is not file line start + k: the snippet's range (and the line a
    search centres on) must still be the transcript's, so that memory_get of
    snippetStartLine..snippetEndLine returns the lines the snippet shows."""
    cfg, d = sess
    f = d / "s.jsonl"
    append(
        f,
        json.dumps({"type": "session", "id": "s"}),  # 1: not a message
        msg("user", "where does the wombat colony live?"),  # 2
        "{broken json",  # 3: malformed
        msg("assistant", "NO_REPLY"),  # 4: noise
        json.dumps({"type": "tool_call", "name": "x"}),  # 5
        msg("assistant", "the wombat colony lives by the creek bend"),  # 6
        msg("user", "and the platypus?"),  # 7
        "",  # 8: blank
        msg("assistant", "the platypus hides under the old bridge"),  # 9
    )
    with AgentIndex(cfg) as idx:
        idx.sync()
        for query, want in (("creek bend", 6), ("old bridge", 9), ("wombat colony live", 2)):
            (hit,) = idx.search(query, sources=["sessions"], max_results=1, min_score=0)["results"]
            assert hit["startLine"] <= hit["snippetStartLine"] <= want <= hit["snippetEndLine"]
            got = idx.get(
                hit["path"],
                start=hit["snippetStartLine"],
                lines=hit["snippetEndLine"] - hit["snippetStartLine"] + 1,
            )
            shown = [ln.split(": ", 1)[1] for ln in hit["snippet"].split("\n")]
            for text in shown:  # every message the snippet shows is in the range read
                assert text in got["text"], (text, got["text"])


class _Notes:
    """A third transcript source for the test: one transcript of its own, named in a
    shape neither the files nor the agent database use. What a new source writes:
    what it holds, whether one changed, its pieces past the cursor, their messages;
    the sync does the rest."""

    name = "notes"
    path = "sessions/notes/desk/2026-11-27.jsonl"
    said = msg("user", "the heron nests by the KESTREL-77 gate")

    def owns(self, path: str) -> bool:
        return path.startswith("sessions/notes/desk/")

    def listing(self, run: SyncRun) -> Listing:
        return Listing([Transcript(self.path, None)])

    def changed(self, run: SyncRun, t: Transcript, cursor: SessionCursor | None) -> Change:
        return Change.READ if cursor is None else Change.NONE

    def read(
        self, run: SyncRun, t: Transcript, cursor: SessionCursor | None, should_stop: object
    ) -> Iterator[Piece]:
        yield Piece([self.said], SessionCursor(t.display, 0, 0, 1, 1, "notes", 0, 0),
                    FileState("notes:1", 0, 1), 1)  # fmt: skip

    def render(self, t: Transcript, piece: Piece, *, warn: bool) -> tuple[Messages, int]:
        msgs = Messages()
        for n, line in enumerate(piece.records, 1):
            msgs.add(parse_message(str(line).encode()), n)
        return msgs, 0


def test_a_source_removes_only_its_own_transcripts(
    sess: tuple[Config, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each transcript source owns the paths it names: the files' sync drops a file
    that is gone, and leaves another source's transcripts (no file of that name
    exists) alone, as does the agent database's."""
    cfg, d = sess
    append(d / "a.jsonl", msg("user", "the osprey left the lake"))
    sources = session_sync.SOURCES
    monkeypatch.setattr(session_sync, "SOURCES", (*sources, _Notes()))
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert {h["path"] for h in idx.search("KESTREL-77")["results"]} == {_Notes.path}
        (d / "a.jsonl").unlink()
        idx.sync()
        assert idx.search("osprey")["results"] == []
        assert {h["path"] for h in idx.search("KESTREL-77")["results"]} == {_Notes.path}
    assert [s.name for s in sources] == ["database", "files"]
    db, files = sources
    assert db.owns("sessions/main/s1.jsonl") and not files.owns("sessions/main/s1.jsonl")
    assert files.owns("sessions/a.jsonl") and not db.owns("sessions/a.jsonl")
    assert not any(s.owns(_Notes.path) for s in sources)


def test_rows_no_source_owns_are_removed(
    sess: tuple[Config, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source's transcripts go when it is no longer listed (and rows an older
    version wrote under a path no source owns): no sync would remove them later,
    and memory_get could not open their citations."""
    cfg, d = sess
    append(d / "a.jsonl", msg("user", "the osprey left the lake"))
    sources = session_sync.SOURCES
    monkeypatch.setattr(session_sync, "SOURCES", (*sources, _Notes()))
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert {h["path"] for h in idx.search("KESTREL-77")["results"]} == {_Notes.path}
        monkeypatch.setattr(session_sync, "SOURCES", sources)
        report = idx.sync()
        assert idx.search("KESTREL-77")["results"] == []
        assert report.sessions is not None and report.sessions["removed"] == 1
        assert [h["path"] for h in idx.search("osprey")["results"]] == ["sessions/a.jsonl"]


def test_a_transcript_rewritten_in_place_longer_is_read_again(
    sess: tuple[Config, Path],
) -> None:
    """Truncated and written again through the same inode, its head unchanged and
    longer than before, is not taken for growth: the cursor proves the bytes it stands
    on (the last of its committed lines), so the replaced value leaves the index."""
    cfg, d = sess
    f = d / "s.jsonl"
    filler = [msg("user", f"filler line {i} about nothing in particular") for i in range(150)]
    append(f, *filler, msg("user", "the ferry colour is OLDVALUE"))
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert idx.search("OLDVALUE")["results"]
        ino = f.stat().st_ino
        with f.open("r+", encoding="utf-8") as fh:  # the same inode, written again
            fh.truncate(0)
            fh.write(
                "\n".join([*filler, msg("user", "the ferry colour: it is NEWVALUE from now on")])
                + "\n"
            )
        assert f.stat().st_ino == ino
        rep = idx.sync_sessions(due_only=False)
        assert rep.restarted == 1
        assert idx.search("OLDVALUE", min_score=0)["results"] == []
        hit = idx.search("NEWVALUE")["results"][0]
        assert hit["startLine"] <= 151 == hit["endLine"]


def test_a_cursor_from_before_marks_still_knows_its_file(sess: tuple[Config, Path]) -> None:
    """An index written before cursors proved their place (the head's hash alone) is
    not read again from the start: it grows as before and is marked at its next commit."""
    import hashlib

    cfg, d = sess
    f = d / "s.jsonl"
    append(f, *[msg("user", f"old cursor line {i} walrus") for i in range(5)])
    with AgentIndex(cfg) as idx:
        idx.sync()
        c = idx.store.session_cursors()["sessions/s.jsonl"]
        old_head = hashlib.sha256(f.read_bytes()[: c.head_len]).hexdigest()
        idx.store.db.execute("UPDATE session_cursors SET head=?", (old_head,))
        append(f, msg("user", "grown after the upgrade narwhal"))
        rep = idx.sync_sessions(due_only=False)
        assert rep.restarted == 0
        assert idx.search("narwhal")["results"][0]["startLine"] == 6
        assert idx.store.session_cursors()["sessions/s.jsonl"].head.startswith("2:")


def test_a_transcript_hit_carries_openclaws_provenance(sess: tuple[Config, Path]) -> None:
    """memory-core's classes from OpenClaw's marks on each message: the owner's
    message is `owner` and the reply to it `agent`; a message from someone else is
    `untrusted`, and so is the reply; OpenClaw's own message is `system`; a tainted
    turn's reply is `untrusted`. A chunk has its least trusted message's class."""

    def said(role: str, text: str, when: str, **marks: object) -> str:
        m: dict[str, object] = {"role": role, "content": [{"type": "text", "text": text}]}
        if marks.get("system"):
            m["provenance"] = {"kind": "internal_system"}
        oc = {k: v for k, v in marks.items() if k in ("senderIsOwner", "turnTainted")}
        if oc:
            m["__openclaw"] = oc
        return json.dumps({"type": "message", "timestamp": when, "message": m})

    cfg, d = sess
    cfg = replace(cfg, chunking=replace(cfg.chunking, tokens=16, overlap=0))  # a chunk each
    day = "2026-11-20T10:00:0{}Z"
    append(
        d / "s.jsonl",
        said("user", "the owner asks about the HERON ledger", day.format(1), senderIsOwner=True),
        said("assistant", "the agent answers with the BITTERN total", day.format(2)),
        said("user", "a stranger writes about the CORMORANT deal", day.format(3)),
        said("assistant", "a reply about the EGRET figures follows", day.format(4)),
        said("user", "openclaw itself notes the PLOVER reminder", day.format(5), system=True),
        said("user", "the owner again about the AVOCET list", day.format(6), senderIsOwner=True),
        said("assistant", "a tainted reply naming the CURLEW", day.format(7), turnTainted=True),
    )
    with AgentIndex(cfg) as idx:
        idx.sync()

        def prov(word: str) -> dict[str, object]:
            (hit,) = [r for r in idx.search(word)["results"] if word in r["snippet"]][:1]
            return dict(hit["provenance"])

        assert prov("HERON")["originClass"] == "owner"
        assert prov("BITTERN")["originClass"] == "agent"
        assert prov("CORMORANT")["originClass"] == "untrusted"
        assert prov("EGRET")["originClass"] == "untrusted"
        assert prov("PLOVER")["originClass"] == "system"
        assert prov("CURLEW")["originClass"] == "untrusted"
        heron = prov("HERON")
        assert heron["sessionKind"] == "unknown"  # a transcript file no session key names
        assert heron["observedAt"] == 1795168801000  # 2026-11-20T10:00:01Z, its message's
        md = idx.search("rye bread", min_score=0)["results"][0]
        assert md["source"] == "memory" and "provenance" not in md  # its file's: the plugin asks


def test_a_transcript_rewritten_in_place_at_the_same_size_is_read_again(
    sess: tuple[Config, Path],
) -> None:
    """A value masked in place (the same length, the same inode, anywhere in the
    file): nothing grew, so nothing was read; the old value stayed searchable with
    status clean. A change of the file's time at the size it was read to is a
    rewrite: it is read again from the start."""
    cfg, d = sess
    f = d / "s.jsonl"
    lines = [msg("user", f"filler line {i} about the weather") for i in range(40)]
    lines[5] = msg("user", "the locker code is topsecretvalue3 ok")
    append(f, *lines)
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert idx.search("topsecretvalue3")["results"]
        time.sleep(0.01)
        data = f.read_bytes().replace(b"topsecretvalue3", b"XXXXXXXXXXXXXXX")
        with f.open("r+b") as fh:  # the same inode, the same size
            fh.write(data)
        rep = idx.sync_sessions(due_only=True)  # what the daemon runs on the event
        assert rep.restarted == 1
        assert idx.search("topsecretvalue3", min_score=0)["results"] == []
        rep = idx.sync_sessions(due_only=True)  # and not again and again
        assert rep.restarted == 0


def test_a_hard_link_to_an_indexed_file_keeps_what_was_indexed(
    sess: tuple[Config, Path],
) -> None:
    """`ln s.jsonl copy.jsonl` (a backup made with hard links, `cp -al`): both names
    are refused as hard links, as before, but what was indexed of the transcript was
    dropped with status clean. It stays, and status names both."""
    cfg, d = sess
    f = d / "s.jsonl"
    append(f, msg("user", "the delta1 marker about the heron"))
    ws = cfg.workspace
    assert ws is not None
    note = ws / "memory" / "2026-11-03.md"
    note.write_text("- the ibis nests by the weir\n")
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert idx.search("delta1")["results"] and idx.search("ibis")["results"]
        os.link(f, d / "copy.jsonl")
        os.link(note, ws / "memory" / "2026-11-04.md")
        note.write_text("- the ibis nests by the weir, and a spoonbill\n")  # changed, a link
        idx.sync()
        assert idx.search("delta1")["results"] and idx.search("ibis")["results"]
        skipped = {s["path"]: s["reason"] for s in idx.status()["skipped"]}
        assert "a hard link" in skipped["sessions/s.jsonl"]
        assert "a hard link" in skipped["sessions/copy.jsonl"]
        assert "what was indexed of it kept" in skipped["memory/2026-11-03.md"]


@pytest.mark.slow  # a 4 MiB line read and parsed: over the fast lane's 2 s
def test_a_transcript_line_too_long_to_read_is_said_so_by_get(sess: tuple[Config, Path]) -> None:
    """A line over the reader's limit (skipped as malformed by the index) is shown as
    such, not as an empty line with "go on with --from 2" past the file's end."""
    cfg, d = sess
    cfg = replace(cfg, limits=replace(cfg.limits, maxGetBytes=1024))
    f = d / "big.jsonl"
    append(f, msg("user", "w" * (MAX_LINE_BYTES + 4096 * 4 + 10)))
    with AgentIndex(cfg) as idx:
        idx.sync()
        got = idx.get("sessions/big.jsonl")
        assert got["text"].startswith("[a line of over") and got["totalLines"] == 1
        assert not got["truncated"] and "nextFrom" not in got
        req = GetRequest.parse({"path": "sessions/big.jsonl", "raw": True})
        raw = idx.read(lambda s: s.get(req))
        assert raw["truncated"] and "nextFrom" not in raw and raw["text"].startswith('{"type"')
