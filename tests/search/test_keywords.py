"""The in-memory keyword postings rank exactly as FTS5's bm25() does, read afresh
or caught up from the change feed."""

from __future__ import annotations

import json
import random
import re
import threading
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SQLITE_AND_PG, write

from indexer.config import Config, SessionsConfig, StoreConfig
from indexer.engine import AgentIndex
from indexer.search.query.parse import parse_query
from indexer.search.snapshot import keywords
from indexer.search.snapshot.keywords import KeywordPart
from indexer.search.snapshot.live import LiveIndex
from providers.base import EmbeddingProvider, Vectors, normalize

pytestmark = pytest.mark.slow

VOCAB = [
    "heron",
    "reed",
    "pond",
    "running",
    "runs",
    "runner",
    "ran",
    "walk",
    "walking",
    "walked",
    "memory",
    "sessions",
    "garden",
    "kestrel",
    "zigbee",
    "sensor",
    "pairing",
    "deploy",
    "deploys",
    "deployed",
    "gateway",
    "lisbon",
    "rye",
    "bread",
    "coffee",
    "déjà",
    "café",
    "naïve",
    "über",
    "straße",
    "alpha",
    "beta",
    "gamma",
    "delta",
    "notes",
    "path",
    "heading",
]


def _corpus(ws: Path, sessions: Path, rng: random.Random) -> None:
    for i in range(120):
        lines = [f"# {rng.choice(VOCAB).title()} {i}", ""]
        for _ in range(rng.randint(3, 30)):
            words = [
                rng.choice(VOCAB[: rng.randint(4, len(VOCAB))]) for _ in range(rng.randint(2, 14))
            ]
            lines.append("- " + " ".join(words))
        write(ws, f"memory/{rng.choice(VOCAB)}-{i}.md", "\n".join(lines) + "\n")
    with (sessions / "s.jsonl").open("w") as fh:
        for _ in range(60):
            text = " ".join(rng.choice(VOCAB) for _ in range(8))
            fh.write(json.dumps({"type": "message", "role": "user", "content": text}) + "\n")


@pytest.fixture
def idx(tmp_path: Path) -> AgentIndex:
    return _index(tmp_path, StoreConfig())


@pytest.fixture(params=SQLITE_AND_PG)
def idx_any(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> AgentIndex:
    """``idx`` on either store (PostgreSQL's snapshot is built from its chunk_terms,
    here in segments of 37 chunks merged as they come)."""
    url = ""
    if request.param == "postgresql":
        url = request.getfixturevalue("pg_url")
        monkeypatch.setattr(keywords, "_BY_CHUNK_BATCH", 37)
    return _index(tmp_path, StoreConfig(url=url))


def _index(tmp_path: Path, store: StoreConfig) -> AgentIndex:
    ws, sessions = tmp_path / "ws", tmp_path / "sessions"
    sessions.mkdir()
    rng = random.Random(7)
    _corpus(ws, sessions, rng)
    cfg = Config(
        workspace=ws,
        indexPath=tmp_path / "i.sqlite",
        sessions=SessionsConfig(dir=str(sessions)),
        store=store,
    )
    with AgentIndex(cfg) as w:
        w.sync()
        # Edits and deletions: FTS5 keeps tombstones and adjusted totals to match.
        files = sorted((ws / "memory").iterdir())
        for f in files[:15]:
            f.unlink()
        for f in files[15:40]:
            f.write_text(f.read_text() + "- appended heron pond line\n")
        w.sync()
    return AgentIndex(cfg, readonly=True, live=LiveIndex(min_chunks=0))


def _in_memory(
    idx: AgentIndex, query: str, limit: int, sources: list[str] | None
) -> list[tuple[int, float, str]] | None:
    assert idx.live is not None and idx.live.snapshot is not None
    kw = idx.live.snapshot.keywords
    assert kw is not None
    got = kw.search(idx.live.tokens, parse_query(query), limit, [sources])
    return None if got is None else got[0]


def _compare(idx: AgentIndex, query: str, sources: list[str] | None) -> int:
    q = parse_query(query)
    fts = [(r.id, r.rank) for r in idx.store.fts_search(q.keyword, 30, sources)]
    mem = _in_memory(idx, query, 30, sources)
    assert mem is not None, query
    fts = [x for x in fts if x[1] < 0]  # rows matching only a weight-0 column score 0
    assert len(mem) == len(fts), query
    sources_of = {i: r.source for i, r in idx.store.chunk_rows([i for i, *_ in mem]).items()}
    assert all(sources_of[i] == src for i, _, src in mem)
    for (i1, r1), (i2, r2, _) in zip(fts, mem, strict=True):
        assert r1 == pytest.approx(r2, rel=1e-9, abs=1e-12), (query, i1, i2)
    return len(mem)


def _compare_many(idx: AgentIndex, seed: int, n: int = 150) -> int:
    rng = random.Random(seed)
    compared = 0
    for _ in range(n):
        query = " ".join(rng.sample(VOCAB, rng.randint(1, 4)))
        for sources in (None, ["memory"], ["sessions"]):
            compared += _compare(idx, query, sources)
    return compared


def test_in_memory_ranks_equal_fts5(idx_any: AgentIndex) -> None:
    idx = idx_any
    assert idx.live is not None and idx.live.wait_ready(idx.store)
    assert _compare_many(idx, 11) > 1000


def test_falls_back_to_fts5_when_it_cannot_answer(idx: AgentIndex) -> None:
    assert idx.live is not None and idx.live.wait_ready(idx.store)
    for query in ('"heron pond"', "KESTREL-0429", "東京", "src/app.py"):
        assert _in_memory(idx, query, 10, None) is None
    # The engine answers them all the same (through FTS5).
    assert idx.search('"heron pond"', min_score=0)["results"]


def test_status_says_what_the_snapshot_holds(idx: AgentIndex) -> None:
    """``status`` reports the in-memory snapshot: not there before the first read,
    current with every live chunk after it, behind after another process wrote."""
    live = idx.live
    assert live is not None
    assert idx.status()["memory"]["state"] in ("not loaded", "loading")
    assert live.wait_ready(idx.store)
    st = idx.status()
    assert st["memory"] == {
        "state": "current",
        "keywordRows": st["chunks"],
        "vectorRows": None,  # a keyword index
        "error": None,
    }
    _edit(idx, random.Random(3), 0)
    st = idx.status()
    assert st["memory"]["state"] in ("behind", "updating")
    assert live.wait_ready(idx.store)
    st = idx.status()
    assert st["memory"]["state"] == "current" and st["memory"]["keywordRows"] == st["chunks"]


def test_the_writer_never_waits_for_a_snapshot_being_read(
    idx: AgentIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a background thread reads the whole snapshot (about 40 s at a million
    chunks), the writer's catch-up returns at once (it waited for the read: no
    indexing meanwhile, and a SIGTERM took 29 s), and the read goes round once more
    when done, so what the writer wrote meanwhile is in the snapshot."""
    live = idx.live
    assert live is not None
    reading, release = threading.Event(), threading.Event()
    real = live._read_all

    def slow(*a: Any, **k: Any) -> Any:
        reading.set()
        assert release.wait(30)
        return real(*a, **k)

    monkeypatch.setattr(live, "_read_all", slow)
    live.get(idx.store, idx.store.change_versions())  # a search starts the read
    assert reading.wait(10)
    _edit(idx, random.Random(9), 0)  # another writer: this one's catch-up below
    t0 = time.monotonic()
    live.update(idx.store, full=False)
    assert time.monotonic() - t0 < 1.0
    release.set()
    deadline = time.monotonic() + 30
    while live._refresh.busy and time.monotonic() < deadline:
        time.sleep(0.01)
    snap = live.snapshot
    assert snap is not None and snap.versions == idx.store.change_versions()
    assert idx.status()["memory"]["keywordRows"] == idx.status()["chunks"]


def test_a_failed_read_is_not_read_again_at_once(
    idx: AgentIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer asking for one more round while a full read runs does not make a
    failed read start again at once (a failing 40 s read back to back would keep a
    core busy): the next search starts one, spaced out."""
    live = idx.live
    assert live is not None
    reading, release, calls = threading.Event(), threading.Event(), []

    def failing(*a: Any, **k: Any) -> Any:
        calls.append(1)
        reading.set()
        assert release.wait(30)
        raise RuntimeError("the read failed")

    monkeypatch.setattr(live, "_read_all", failing)
    live.get(idx.store, idx.store.change_versions())
    assert reading.wait(10)
    _edit(idx, random.Random(9), 0)
    live.update(idx.store, full=False)  # asks for one more round
    release.set()
    deadline = time.monotonic() + 30
    while live._refresh.busy and time.monotonic() < deadline:
        time.sleep(0.01)
    assert calls == [1] and live.snapshot is None
    assert live.error == "RuntimeError: the read failed"


def _edit(idx: AgentIndex, rng: random.Random, round_: int) -> None:
    """Deletions, rewrites, appends, a new file and transcript lines, then a sync."""
    ws = idx.cfg.workspace
    assert ws is not None
    files = sorted((ws / "memory").iterdir())
    for f in rng.sample(files, 3):
        f.unlink()
    for f in rng.sample([f for f in files if f.exists()], 4):
        f.write_text(f.read_text() + f"- round {round_} quokka {rng.choice(VOCAB)}\n")
    write(ws, f"memory/new-{round_}.md", f"# New\n- a quokka at the heron pond {round_}\n")
    sessions = idx.cfg.sessions_dir()
    assert sessions is not None
    with (sessions / "s.jsonl").open("a") as fh:
        text = " ".join(rng.choice(VOCAB) for _ in range(8))
        fh.write(json.dumps({"type": "message", "role": "user", "content": text}) + "\n")
    with AgentIndex(idx.cfg) as w:
        w.sync()


def test_a_snapshot_caught_up_from_the_change_feed_ranks_as_fts5(idx_any: AgentIndex) -> None:
    """After writes the snapshot is brought up to date from the change feed (new
    segments, dead rows, merges), never read again in full, and ranks exactly as
    FTS5 over the edited index; until then the old one answers at once."""
    idx = idx_any
    live = idx.live
    assert live is not None and live.wait_ready(idx.store)
    old = live.snapshot
    full = live.full_loads
    rng = random.Random(5)
    _edit(idx, rng, 0)
    versions = idx.store.change_versions()
    assert old is not None and old.versions != versions
    # A search meanwhile reads the old snapshot (an update starts in the background).
    live._refresh.start = lambda *a, **k: False  # type: ignore[method-assign]
    assert live.get(idx.store, versions) is old
    quokka = idx.search("quokka", min_score=0)["results"]
    assert all(r["path"] for r in quokka)  # rows read by id: nothing deleted is shown
    del live._refresh.start
    for round_ in range(1, 8):
        assert live.wait_ready(idx.store)
        _edit(idx, rng, round_)
    assert live.wait_ready(idx.store)
    assert live.full_loads == full and live.updates >= 8
    snap = live.snapshot
    assert snap is not None and snap.keywords is not None
    assert len(snap.keywords.segments) < 8  # merged as they came
    assert snap.keywords.live == sum(c["chunks"] for c in idx.store.counts().values())
    assert _compare_many(idx, 12, 80) > 500
    assert _compare(idx, "quokka heron", None) > 5
    assert idx.search("quokka pond", min_score=0)["results"][0]["path"].startswith("memory/new-")


def test_a_moved_transcript_is_reindexed_under_its_new_path(idx: AgentIndex) -> None:
    live = idx.live
    assert live is not None and live.wait_ready(idx.store)
    sessions = idx.cfg.sessions_dir()
    assert sessions is not None
    (sessions / "s.jsonl").rename(sessions / "zigbee-log.jsonl")  # rotated: same inode
    with AgentIndex(idx.cfg) as w:
        w.sync()
    changes = idx.store.changes_since(0)
    assert changes is not None and changes.moved, "the rename is in the change feed"
    full = live.full_loads
    assert live.wait_ready(idx.store) and live.full_loads == full
    assert _compare(idx, "zigbee jsonl", ["sessions"]) > 0
    assert _compare_many(idx, 13, 40) > 200


def test_a_pruned_change_feed_means_a_full_read(idx: AgentIndex) -> None:
    live = idx.live
    assert live is not None and live.wait_ready(idx.store)
    _edit(idx, random.Random(8), 0)
    with AgentIndex(idx.cfg) as w:
        assert w.store.prune_changes(0) > 0
    full = live.full_loads
    assert live.wait_ready(idx.store) and live.full_loads == full + 1
    assert _compare_many(idx, 14, 40) > 200


def test_a_failed_update_drops_the_snapshot_and_searches_stay_current(
    idx: AgentIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot is a cache: if catching it up fails, the writer's task still
    succeeds, the snapshot is dropped (never kept stale) and searches read SQLite."""
    live = idx.live
    assert live is not None and live.wait_ready(idx.store)
    ws = idx.cfg.workspace
    assert ws is not None

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("postings on fire")

    monkeypatch.setattr(KeywordPart, "apply", boom)
    write(ws, "memory/late.md", "- a wombat crossed the garden\n")
    with AgentIndex(idx.cfg, live=live) as w:  # the writer catches the snapshot up
        report = w.sync()
    assert report.added == 1
    assert live.snapshot is None and live.error is not None and "on fire" in live.error
    assert idx.search("wombat", min_score=0)["results"][0]["path"] == "memory/late.md"
    monkeypatch.undo()
    assert live.wait_ready(idx.store) and live.error is None
    assert _compare(idx, "wombat garden", None) > 1


def test_small_indexes_stay_with_fts5(idx: AgentIndex) -> None:
    live = LiveIndex(min_chunks=10**6)
    assert live.wait_ready(idx.store)
    snap = live.snapshot
    assert snap is not None and snap.keywords is None
    threads = threading.active_count()
    for _ in range(20):  # nothing to do until the index changes
        assert live.get(idx.store, idx.store.change_versions()) is snap
    assert threading.active_count() == threads
    ms = AgentIndex(idx.cfg, readonly=True, live=live)
    assert ms.search("heron", min_score=0)["results"]
    ms.close()


class WordHash(EmbeddingProvider):
    """Bag of hashed words: deterministic vectors for comparing two search paths."""

    id = "wordhash"

    def __init__(self) -> None:
        super().__init__(model="wordhash-64", dims=64)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        m = np.full((len(texts), 64), 0.01)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                m[i, zlib.crc32(w.encode()) % 64] += 1.0
        return normalize(m)


@pytest.mark.parametrize("hybrid", [False, True])
def test_in_memory_candidates_give_the_same_results(idx: AgentIndex, hybrid: bool) -> None:
    """The daemon's path (postings and matrix in memory, rows read only for what is
    looked at or shown) answers exactly as the SQL path (FTS5, rows read up front)."""
    prov = WordHash() if hybrid else None
    if prov is not None:
        with AgentIndex(idx.cfg, provider=prov) as w:
            w.sync()
            assert w.status()["vector"]["pendingChunks"] == 0
    fast = AgentIndex(idx.cfg, readonly=True, provider=prov, live=LiveIndex(min_chunks=0))
    # Keywords by FTS5, the same in-memory vectors:
    plain = AgentIndex(idx.cfg, readonly=True, provider=prov, live=LiveIndex(min_chunks=10**9))
    assert plain.live is not None and plain.live.wait_ready(plain.store)
    assert fast.live is not None and fast.live.wait_ready(fast.store)
    snap = fast.live.snapshot
    assert snap is not None and snap.keywords is not None
    assert (snap.vectors is not None) == hybrid
    rng = random.Random(3)
    compared = 0
    for _ in range(40):
        query = " ".join(rng.sample(VOCAB, rng.randint(1, 3)))
        for floor in (None, 0.0, 0.6, 0.9):
            for sources in (None, "memory", "sessions"):
                for limit in (3, 10):
                    a = plain.search(query, min_score=floor, sources=sources, max_results=limit)
                    b = fast.search(query, min_score=floor, sources=sources, max_results=limit)
                    assert a["mode"] == ("hybrid" if hybrid else "keyword")
                    assert a == b, (query, floor, sources, limit)
                    compared += len(a["results"])
    assert compared > 2000
    fast.close()
    plain.close()


def test_a_chunk_deleted_after_the_candidates_were_read_is_not_shown(idx: AgentIndex) -> None:
    from indexer.api import SearchRequest
    from indexer.search.candidates import Candidate
    from indexer.search.facts import IndexFacts
    from indexer.search.results import render_results
    from indexer.search.stages.context import RunContext
    from indexer.search.stages.dedup import Dedup
    from indexer.store import SearchRow

    by_path: dict[str, SearchRow] = {}
    for row in idx.store.chunk_rows(list(range(1, 400))).values():
        by_path.setdefault(row.path, row)
    real = list(by_path.values())[:3]
    gone = 10**9  # no such chunk (deleted since its candidate was found)
    hits = [
        Candidate(cid, "memory", 0.0, 1.0 - n / 10, 0.5, False, True)
        for n, cid in enumerate([gone, *(r.id for r in real)])
    ]
    facts = IndexFacts(idx.store.change_versions(), None, False, False, "")
    ctx = RunContext(idx.cfg, idx.store, None, None, SearchRequest("heron"), facts)
    out = render_results(ctx, Dedup()(ctx, hits))
    assert ctx.rows.reads == 1  # the rows of all candidates, in one read
    assert ctx.rows.get(gone) is None
    assert [o["path"] for o in out] == [r.path for r in real]
    assert [o["startLine"] for o in out] == [r.start_line for r in real]


def test_ties_go_to_the_lower_chunk_id_on_every_path(tmp_path: Path) -> None:
    """Forty chunks with the same score for a word: FTS5 and the in-memory postings
    both return the ten of lowest id (the daemon answers from memory, a one-shot
    call from FTS5: the same results either way)."""
    ws = tmp_path / "ws"
    for n in range(40):
        (ws / "memory").mkdir(parents=True, exist_ok=True)
        (ws / "memory" / f"n{n:02d}.md").write_text("- the heron waits by the pond\n")
    cfg = Config(workspace=ws, indexPath=tmp_path / "i.sqlite")
    with AgentIndex(cfg) as w:
        w.sync()
    idx = AgentIndex(cfg, readonly=True, live=LiveIndex(min_chunks=0))
    try:
        assert idx.live is not None
        idx.live.wait_ready(idx.store)
        fts = [r.id for r in idx.store.fts_search(parse_query("heron").keyword, 10)]
        mem = _in_memory(idx, "heron", 10, None)
        assert mem is not None
        every = sorted(idx.store.chunk_rows(range(1, 1000)))
        assert fts == [i for i, *_ in mem] == every[:10]
    finally:
        idx.close()


def test_a_snapshot_is_of_one_index_file_not_of_its_name(tmp_path: Path) -> None:
    """The index file deleted and built again under the same name (someone cleared
    the state folder while the daemon ran) is another index: the snapshot of the old
    one is not caught up from the new one's change feed, which starts again from the
    beginning (before, nothing written to the new file after that was ever found in
    memory while status said current)."""
    ws = tmp_path / "ws"
    note = write(ws, "memory/2026-01-01.md", "- heron at the pond\n")
    cfg = Config(workspace=ws, indexPath=tmp_path / "i.sqlite")
    live = LiveIndex(min_chunks=0)
    with AgentIndex(cfg) as w:
        w.sync()
        for n in range(8):  # the old file's feed runs ahead
            note.write_text(f"- heron count {n}\n")
            w.sync()
        assert live.wait_ready(w.store)
        old = w.store.identity
    for f in tmp_path.glob("i.sqlite*"):
        f.unlink()
    with AgentIndex(cfg) as w:
        w.sync()
        write(ws, "memory/2026-02-02.md", "- kingfisher at the new pond\n")
        w.sync()
        assert w.store.identity != old and w.store.generation.endswith("i.sqlite")
        assert live.wait_ready(w.store)
        assert live.state(w.store.identity, w.store.change_versions())["state"] == "current"
        reader = AgentIndex(cfg, readonly=True, live=live)
        try:
            assert _in_memory(reader, "kingfisher", 5, None), "the new file's rows"
        finally:
            reader.close()
