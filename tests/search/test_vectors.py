"""The in-memory vectors' neighbours are numpy's exact top-k, per source part, agree
with sqlite-vec's, and stay exact as the snapshot is caught up from the change feed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer.search.snapshot.live import LiveIndex
from indexer.search.snapshot.vector_memory import VectorPart, stored_neighbours
from indexer.store import ChunkRow, FileState, Store
from providers.base import normalize

DIMS = 24


@pytest.fixture
def store(tmp_path: Path) -> Store:
    rng = np.random.default_rng(4)
    s = Store(tmp_path / "v.sqlite")
    with s.transaction():
        s.ensure_vector_table(DIMS)
        for f in range(30):
            source = "sessions" if f % 3 == 0 else "memory"
            rows = [
                ChunkRow(k + 1, k + 1, "", f"h{f}-{k}", f"line {f} {k}", f"line {f} {k}")
                for k in range(10)
            ]
            path = f"{source}/f{f}.md" if source == "memory" else f"sessions/s{f}.jsonl"
            s.replace_file(path, source, FileState("x", 0, 0), 10, rows)
        ids = [int(r[0]) for r in s.db.execute("SELECT id FROM chunks ORDER BY id")]
        vecs = normalize(rng.standard_normal((len(ids), DIMS)))
        s.put_vectors((i, vecs[n].astype("<f4").tobytes()) for n, i in enumerate(ids))
    return s


def _brute(store: Store, q: np.ndarray, k: int, source: str | None) -> list[int]:
    got = [
        (cid, float(np.frombuffer(blob, dtype="<f4") @ q))
        for cid, src, _, blob in store.all_vectors()
        if source is None or src == source
    ]
    got.sort(key=lambda x: -x[1])
    return [cid for cid, _ in got[:k]]


def _part(store: Store) -> VectorPart:
    got = VectorPart.build(store, "key")
    assert got is not None
    return got


def test_one_pass_gives_each_parts_exact_top_k(store: Store) -> None:
    vm = _part(store)
    assert len(vm) == 300
    q = normalize(np.random.default_rng(9).standard_normal((1, DIMS)))[0]
    (alone,) = vm.search(q, 12)
    assert [c for c, _, _ in alone] == _brute(store, q, 12, None)
    mem, ses = vm.search(q, 12, [["memory"], ["sessions"]])
    assert [c for c, _, _ in mem] == _brute(store, q, 12, "memory")
    assert [c for c, _, _ in ses] == _brute(store, q, 12, "sessions")
    assert {s for _, _, s in mem} == {"memory"} and {s for _, _, s in ses} == {"sessions"}
    sims = [s for _, s, _ in mem]
    assert sims == sorted(sims, reverse=True)
    # sqlite-vec (the one-shot CLI path) finds the same neighbours.
    assert [c for c, _ in stored_neighbours(store, q, 12)] == [c for c, _, _ in alone]


def test_rows_are_read_once_in_one_go_and_missing_ones_are_left_out(store: Store) -> None:
    from indexer.search.candidates import ChunkRows

    got = store.chunk_rows([13, 3, 10**9])
    assert sorted(got) == [3, 13]
    assert got[13].path == "memory/f1.md" and got[13].text == "line 1 2"
    assert got[3].path == "sessions/s0.jsonl" and got[3].source == "sessions"
    rows = ChunkRows(store)
    rows.need([13, 3, 10**9])
    rows.need([3, 10**9, 13])  # known, or known to be gone: no second read
    assert rows.reads == 1 and rows.get(10**9) is None and rows.get(13) == got[13]


def _change(store: Store, q: np.ndarray, gone: int, again: int) -> int:
    """One chunk deleted, one embedded again (a new vector), one new chunk holding the
    query's own vector; returns the new chunk's id."""
    with store.transaction():
        store.db.execute("DELETE FROM chunks WHERE id = ?", (gone,))
        store.put_vectors([(again, (-q).astype("<f4").tobytes())])
        store.replace_file(
            "memory/new.md",
            "memory",
            FileState("y", 0, 0),
            1,
            [ChunkRow(1, 1, "", "hnew", "brand new", "brand new")],
        )
        (new_id,) = store.db.execute("SELECT id FROM chunks WHERE hash = 'hnew'").fetchone()
        store.put_vectors([(int(new_id), q.astype("<f4").tobytes())])
    return int(new_id)


def test_a_search_never_waits_for_an_update_and_updates_read_only_the_changes(
    store: Store,
) -> None:
    """The daemon's reader threads search the snapshot they have while it is caught up
    in the background; the update applies the change feed (no full read) and then
    answers exactly as a full read of the changed index."""
    import threading
    import time

    live = LiveIndex()
    with store.transaction():
        store.meta_set("vectorKey", "key")
    assert live.wait_ready(store)
    old = live.snapshot
    # keyword postings too: the daemon keeps both from the first chunk
    assert old is not None and old.vectors is not None and old.keywords is not None
    q = normalize(np.random.default_rng(5).standard_normal((1, DIMS)))[0]
    (before,) = old.vectors.search(q, 5)
    gone, again = before[0][0], before[1][0]
    new_id = _change(store, q, gone, again)
    versions = store.change_versions()
    release = threading.Event()
    real_apply = live._apply

    def slow_apply(*args: object) -> object:
        assert release.wait(30)
        return real_apply(*args)  # type: ignore[arg-type]

    live._apply = slow_apply  # type: ignore[method-assign]
    t0 = time.monotonic()
    assert live.get(store, versions) is old  # the update is blocked: the search did not wait
    assert time.monotonic() - t0 < 5
    release.set()
    deadline = time.monotonic() + 30
    while live.updates == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    del live._apply
    assert live.wait_ready(store) and live.full_loads == 1
    snap = live.snapshot
    assert snap is not None and snap.vectors is not None and snap.versions == versions
    assert len(snap.vectors) == 300  # one gone, one new; the re-embedded one once
    (after,) = snap.vectors.search(q, 300)
    assert after[0][0] == new_id and after[-1][0] == again and gone not in {c for c, _, _ in after}
    (full,) = _part(store).search(q, 300)
    assert [(c, round(s, 5)) for c, s, _ in after] == [(c, round(s, 5)) for c, s, _ in full]


def test_no_snapshot_of_this_file_means_ask_sqlite(store: Store, tmp_path: Path) -> None:
    live = LiveIndex()
    with store.transaction():
        store.meta_set("vectorKey", "key")
    live._refresh.start = lambda *a, **k: False  # type: ignore[method-assign]
    assert live.get(store, store.change_versions()) is None
    assert live.update(store, full=False) is None  # the writer leaves full reads to a thread
    del live._refresh.start
    assert live.wait_ready(store)
    other = Store(tmp_path / "other.sqlite")
    assert live.get(other, other.change_versions()) is None  # another file: not this one's
    other.close()


def test_a_quantized_part_finds_the_neighbours_the_exact_one_does(store: Store) -> None:
    """From ``quantize_at`` vectors a part keeps sign bits and int8 rows instead of
    float32: the same neighbours per source part, similarities within int8's error."""
    exact = _part(store)
    small = VectorPart.build(store, "key", quantize_at=0)
    assert small is not None and small.quantized and not exact.quantized
    seg = small.segments[0]
    assert seg.mat is None and seg.codes is not None and seg.codes.dtype == np.int8
    rng = np.random.default_rng(11)
    for q in normalize(rng.standard_normal((20, DIMS))):
        for want, got in zip(
            exact.search(q, 12, [None, ["sessions"]]),
            small.search(q, 12, [None, ["sessions"]]),
            strict=True,
        ):
            sims = dict((c, s) for c, s, _ in want)
            assert len({c for c, _, _ in got} & set(sims)) >= 11  # a near tie may swap at 12
            for c, s, src in got:
                assert abs(s - float(np.frombuffer(_vec(store, c), "<f4") @ q)) < 0.02
                assert src in ("memory", "sessions")
        assert {s for _, _, s in small.search(q, 12, [["sessions"]])[0]} == {"sessions"}


def _vec(store: Store, cid: int) -> bytes:
    return next(blob for c, _, _, blob in store.all_vectors() if c == cid)


def test_the_bits_bring_a_vectors_own_chunk_into_a_small_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the rows nearest by their sign bits are scored: a query near a stored
    vector finds that vector's chunk first even when 64 of 2,000 rows are scored."""
    import indexer.search.snapshot.vector_memory as vm

    dims = 384
    rng = np.random.default_rng(8)
    s = Store(tmp_path / "big.sqlite")
    with s.transaction():
        s.ensure_vector_table(dims)
        rows = [ChunkRow(k + 1, k + 1, "", f"h{k}", f"t {k}", f"t {k}") for k in range(2000)]
        s.replace_file("memory/big.md", "memory", FileState("x", 0, 0), 2000, rows)
        ids = [int(r[0]) for r in s.db.execute("SELECT id FROM chunks ORDER BY id")]
        base = rng.standard_normal(dims) * 0.8  # embeddings share a direction
        vecs = normalize(base + rng.standard_normal((len(ids), dims)))
        s.put_vectors((i, vecs[n].astype("<f4").tobytes()) for n, i in enumerate(ids))
    monkeypatch.setattr(vm, "POOL", 64)
    part = VectorPart.build(s, "key", quantize_at=1000)
    assert part is not None and part.quantized
    for n in rng.choice(len(ids), 25, replace=False):
        q = normalize((vecs[n] + rng.standard_normal(dims) * 0.02)[None, :])[0]
        (got,) = part.search(q, 4)
        assert got[0][0] == ids[n]
    s.close()


def test_a_part_that_grows_past_the_threshold_is_quantized_on_the_way(store: Store) -> None:
    """The writer's update that brings a part to ``quantize_at`` vectors quantizes it;
    deleted and replaced vectors stay gone."""
    live = LiveIndex(quantize_at=301)
    with store.transaction():
        store.meta_set("vectorKey", "key")
    assert live.wait_ready(store)
    snap = live.snapshot
    assert snap is not None and snap.vectors is not None and not snap.vectors.quantized
    q = normalize(np.random.default_rng(5).standard_normal((1, DIMS)))[0]
    (before,) = snap.vectors.search(q, 5)
    gone, again = before[0][0], before[1][0]
    new_id = _change(store, q, gone, again)  # 300 vectors still
    with store.transaction():
        store.replace_file(
            "memory/more.md", "memory", FileState("z", 0, 0), 1,
            [ChunkRow(1, 1, "", "hmore", "one more", "one more")],
        )  # fmt: skip
        (more,) = store.db.execute("SELECT id FROM chunks WHERE hash = 'hmore'").fetchone()
        store.put_vectors([(int(more), (q + 0.5 * _unit(DIMS)).astype("<f4").tobytes())])
    assert live.wait_ready(store) and live.full_loads == 1
    snap = live.snapshot
    assert snap is not None and snap.vectors is not None and snap.vectors.quantized
    assert all(seg.mat is None for seg in snap.vectors.segments)
    (after,) = snap.vectors.search(q, 400)
    ids = [c for c, _, _ in after]
    assert ids[:2] == [new_id, more] and ids[-1] == again and gone not in ids and len(ids) == 301


def _unit(dims: int) -> np.ndarray:
    return normalize(np.random.default_rng(21).standard_normal((1, dims)))[0]
