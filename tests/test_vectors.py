"""The in-memory matrix's neighbours are numpy's exact top-k, per source part, and
agree with sqlite-vec's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer.store import ChunkRow, FileState, SearchRow, Store
from indexer.vectors import VectorMatrix, knn_sqlite
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


def test_one_pass_gives_each_parts_exact_top_k(store: Store) -> None:
    vm = VectorMatrix()
    vm.refresh(store)
    assert len(vm) == 300
    q = normalize(np.random.default_rng(9).standard_normal((1, DIMS)))[0]
    alone = vm.search(q, 12)
    assert [c for c, _, _ in alone] == _brute(store, q, 12, None)
    both = vm.search(q, 12, [["memory"], ["sessions"]])
    assert [c for c, _, _ in both[:12]] == _brute(store, q, 12, "memory")
    assert [c for c, _, _ in both[12:]] == _brute(store, q, 12, "sessions")
    assert {s for _, _, s in both[:12]} == {"memory"} and {s for _, _, s in both[12:]} == {
        "sessions"
    }
    sims = [s for _, s, _ in both[:12]]
    assert sims == sorted(sims, reverse=True)
    # sqlite-vec (the one-shot CLI path) finds the same neighbours.
    assert [c for c, _ in knn_sqlite(store, q, 12)] == [c for c, _, _ in alone]


def test_pending_rows_are_read_in_one_go_and_missing_ones_stay_pending(store: Store) -> None:
    rows = [SearchRow.pending(i, "memory", -1.5) for i in (13, 3, 10**9)]
    store.load_rows(rows)
    assert [r.loaded for r in rows] == [True, True, False]
    assert rows[0].path == "memory/f1.md" and rows[0].text == "line 1 2" and rows[0].rank == -1.5
    assert rows[1].path == "sessions/s0.jsonl" and rows[1].source == "sessions"
    assert rows[2].path == "" and rows[2].text == ""


def test_a_search_never_waits_for_a_reload_and_stale_rows_are_checked(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's reader threads search the previous load while a new one is read
    in the background; a neighbour whose chunk is gone or holds new text is dropped."""
    import threading
    import time

    import indexer.vectors as vectors

    vm = VectorMatrix()
    vm.refresh(store)
    q = normalize(np.random.default_rng(5).standard_normal((1, DIMS)))[0]
    before = [c for c, _, _ in vm.search(q, 5)]
    gone, changed = before[0], before[1]
    # The index changes under the loaded matrix: one chunk deleted, one rewritten in
    # place (same id, new text), one new chunk with the query's own vector.
    with store.transaction():
        store.db.execute("DELETE FROM chunks WHERE id = ?", (gone,))
        store.db.execute("UPDATE chunks SET hash = 'new' WHERE id = ?", (changed,))
        store.replace_file(
            "memory/new.md",
            "memory",
            FileState("y", 0, 0),
            1,
            [ChunkRow(1, 1, "", "hnew", "brand new", "brand new")],
        )
        (new_id,) = store.db.execute("SELECT id FROM chunks WHERE hash = 'hnew'").fetchone()
        store.put_vectors([(int(new_id), q.astype("<f4").tobytes())])
    version = store.meta_get("vectorsVersion")
    assert version != vm.version
    release = threading.Event()
    real_load = vectors._load

    def slow_load(s: Store) -> object:
        assert release.wait(30)
        return real_load(s)

    monkeypatch.setattr(vectors, "_load", slow_load)
    t0 = time.monotonic()
    stale = vm.fresh_search(store, version, q, 5)
    assert time.monotonic() - t0 < 5  # the reload is blocked: the search did not wait
    assert stale is not None
    ids = [c for c, _, _ in stale]
    assert gone not in ids and changed not in ids and ids == before[2:]
    release.set()
    deadline = time.monotonic() + 30
    while vm.reloads == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert vm.version == version
    fresh = vm.fresh_search(store, version, q, 5)
    assert fresh is not None and fresh[0][0] == int(new_id)
    assert gone not in [c for c, _, _ in fresh]


def test_no_load_of_this_file_means_ask_sqlite_vec(store: Store, tmp_path: Path) -> None:
    vm = VectorMatrix()
    q = normalize(np.random.default_rng(6).standard_normal((1, DIMS)))[0]
    assert vm.fresh_search(store, store.meta_get("vectorsVersion"), q, 5) is None
