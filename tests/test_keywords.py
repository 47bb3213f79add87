"""The in-memory keyword postings rank exactly as FTS5's bm25() does."""

from __future__ import annotations

import json
import random
import re
import threading
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import write

from indexer.config import Config, SessionsConfig
from indexer.engine import MemoryIndex
from indexer.keywords import KeywordIndex
from indexer.query import parse_query
from indexer.vectors import VectorMatrix
from providers.base import EmbeddingProvider, Vectors, normalize

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
def idx(tmp_path: Path) -> MemoryIndex:
    ws, sessions = tmp_path / "ws", tmp_path / "sessions"
    sessions.mkdir()
    rng = random.Random(7)
    _corpus(ws, sessions, rng)
    cfg = Config(
        workspace=ws, indexPath=tmp_path / "i.sqlite", sessions=SessionsConfig(dir=str(sessions))
    )
    with MemoryIndex(cfg) as w:
        w.sync()
        # Edits and deletions: FTS5 keeps tombstones and adjusted totals to match.
        files = sorted((ws / "memory").iterdir())
        for f in files[:15]:
            f.unlink()
        for f in files[15:40]:
            f.write_text(f.read_text() + "- appended heron pond line\n")
        w.sync()
    return MemoryIndex(cfg, readonly=True, keywords=KeywordIndex(min_chunks=0))


def _compare(idx: MemoryIndex, query: str, sources: list[str] | None) -> int:
    q = parse_query(query)
    fts = [(r.id, r.rank) for r in idx.store.fts_search(q.fts_expression(), 30, sources)]
    assert idx.keywords is not None
    mem = idx.keywords.search(idx.store, q, 30, sources)
    assert mem is not None, query
    fts = [x for x in fts if x[1] < 0]  # rows matching only a weight-0 column score 0
    assert len(mem) == len(fts), query
    sources_of = {i: r.source for i, r in idx.store.chunk_rows([i for i, *_ in mem]).items()}
    assert all(sources_of[i] == src for i, _, src in mem)
    for (i1, r1), (i2, r2, _) in zip(fts, mem, strict=True):
        assert r1 == pytest.approx(r2, rel=1e-9, abs=1e-12), (query, i1, i2)
    return len(mem)


def test_in_memory_ranks_equal_fts5(idx: MemoryIndex) -> None:
    assert idx.keywords is not None and idx.keywords.wait_ready(idx.store)
    rng = random.Random(11)
    compared = 0
    for _ in range(150):
        query = " ".join(rng.sample(VOCAB, rng.randint(1, 4)))
        for sources in (None, ["memory"], ["sessions"]):
            compared += _compare(idx, query, sources)
    assert compared > 1000


def test_falls_back_to_fts5_when_it_cannot_answer(idx: MemoryIndex) -> None:
    assert idx.keywords is not None and idx.keywords.wait_ready(idx.store)
    for query in ('"heron pond"', "KESTREL-0429", "東京", "src/app.py"):
        assert idx.keywords.search(idx.store, parse_query(query), 10, None) is None
    # The engine answers them all the same (through FTS5).
    assert idx.search('"heron pond"', min_score=0)["results"]


def test_a_stale_snapshot_answers_caught_up_until_rebuilt(idx: MemoryIndex) -> None:
    """After a write the old snapshot still answers (no search waits for a rebuild,
    none is sent to FTS5's per-row ranking), and its answer is current: chunks
    added since are found, deleted and edited ones are gone."""
    ki = idx.keywords
    assert ki is not None and ki.wait_ready(idx.store)
    ws = idx.cfg.workspace
    assert ws is not None
    heron = parse_query("heron")
    before = {cid for cid, _, _ in ki.search(idx.store, heron, 1000, None) or []}
    gone = sorted((ws / "memory").iterdir())[:10]
    for f in gone[:5]:
        f.unlink()
    for f in gone[5:]:  # edited: every old chunk of the file is replaced
        f.write_text("# Rewritten\n- nothing about birds here\n")
    write(ws, "memory/new.md", "- a quokka visited the heron pond\n")
    with MemoryIndex(idx.cfg) as w:
        w.sync()
    ki.min_interval_s = 3600.0  # no rebuild for the rest of the test
    got = ki.search(idx.store, parse_query("quokka"), 10, None)
    assert got is not None, "a stale snapshot still answers"
    assert ki._snap is not None and not ki._snap.version.endswith(
        str(idx.store.meta_get("chunksVersion"))
    ), "the snapshot is the old one"
    fts = idx.store.fts_search(parse_query("quokka").fts_expression(), 10)
    assert [(r.id, r.rank) for r in fts] == [(cid, rank) for cid, rank, _ in got]
    after = ki.search(idx.store, heron, 1000, None)
    assert after is not None
    alive = idx.store.chunk_hashes(sorted(before))
    now = {cid for cid, _, _ in after}
    assert now - before == {fts[0].id}, "the one new heron chunk is found"
    assert before - now == set(before) - set(alive) != set(), "deleted and edited chunks dropped"
    assert idx.search("quokka", min_score=0)["results"][0]["path"] == "memory/new.md"
    assert ki.wait_ready(idx.store)  # the rebuilt snapshot agrees with FTS5 again
    assert _compare(idx, "quokka heron", None) > 1


def test_small_indexes_stay_with_fts5(idx: MemoryIndex) -> None:
    ki = KeywordIndex(min_chunks=10**6, min_interval_s=0.0)
    assert not ki.ready(idx.store)
    deadline = time.monotonic() + 30
    while ki._building and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ki._snap is None and ki._skipped is not None
    threads = threading.active_count()
    for _ in range(20):  # no new snapshot attempt until the index changes
        assert not ki.ready(idx.store)
    assert threading.active_count() == threads
    assert ki.search(idx.store, parse_query("heron"), 10, None) is None


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
def test_in_memory_candidates_give_the_same_results(idx: MemoryIndex, hybrid: bool) -> None:
    """The daemon's path (postings and matrix in memory, rows read only for what is
    looked at or shown) answers exactly as the SQL path (FTS5, rows read up front)."""
    prov = WordHash() if hybrid else None
    if prov is not None:
        with MemoryIndex(idx.cfg, provider=prov) as w:
            w.sync()
            assert w.status()["vector"]["pendingChunks"] == 0
    fast = MemoryIndex(
        idx.cfg,
        readonly=True,
        provider=prov,
        vectors=VectorMatrix(),
        keywords=KeywordIndex(min_chunks=0),
    )
    plain = MemoryIndex(idx.cfg, readonly=True, provider=prov, vectors=VectorMatrix())
    assert fast.keywords is not None and fast.keywords.wait_ready(fast.store)
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


def test_a_chunk_deleted_after_the_candidates_were_read_is_not_shown(idx: MemoryIndex) -> None:
    from indexer.search import SearchHit, render_results
    from indexer.store import SearchRow

    by_path: dict[str, SearchRow] = {}
    for row in idx.store.chunk_rows(list(range(1, 400))).values():
        by_path.setdefault(row.path, row)
    real = list(by_path.values())[:3]
    pending = [SearchRow.pending(r.id, r.source) for r in real]
    gone = SearchRow.pending(10**9, "memory")  # no such chunk (deleted since)
    hits = [SearchHit(r, 1.0 - n / 10, 0.5, False, True) for n, r in enumerate([gone, *pending])]
    out = render_results(hits, parse_query("heron"), 10, 300, load=idx.store.load_rows)
    assert not gone.loaded and all(r.loaded for r in pending)
    assert [o["path"] for o in out] == [r.path for r in real]
    assert [o["startLine"] for o in out] == [r.start_line for r in real]
