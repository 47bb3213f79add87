"""Hybrid search latency at 100k chunks while a writer embeds and commits, next to
the same searches on an idle index in the same run.

The daemon's situation: one writer adds chunks and their vectors in a loop (each
commit bumps the index's versions), while searches run from another thread over
the shared in-memory snapshot (keyword postings and vectors: indexer/live.py). A
search never waits for it: it answers from the snapshot it has, and a background
thread catches the snapshot up from the store's change feed (a read of what changed,
not of everything). Here the writer is a bare store, as another process would be,
so every catch-up is the background one (the daemon's writer also catches up
itself after each task).

Index as in bench/hybrid_bench.py (tldr-pages lines, random unit 384-d vectors).
The writer commits one 50-chunk file with vectors, then pauses ``--write-gap-ms``
(default 20 ms: about 40 commits a second at this size). Searches run back to back.
Printed: p50/p99 idle and busy, the ratio of the p99s (target: within 2x), commits
made, incremental updates and full reads of the snapshot, and how many answers
found every chunk they cited.

    python bench/writer_bench.py [--chunks 100000] [--queries 400] [--write-gap-ms 20]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import percentile  # noqa: E402
from hybrid_bench import DIMS, FixedQuery, build, questions  # noqa: E402
from index_bench import real_sentences  # noqa: E402

from indexer.config import Config  # noqa: E402
from indexer.engine import AgentIndex  # noqa: E402
from indexer.search.snapshot.live import LiveIndex  # noqa: E402
from indexer.sources.text import index_text  # noqa: E402
from indexer.store import ChunkRow, FileState, Store  # noqa: E402
from providers.base import normalize  # noqa: E402


class _Discard(Exception):
    pass


class Writer(threading.Thread):
    """Adds (and, once there are 20, replaces) files of 50 chunks with vectors.
    ``publish=False``: the same work, rolled back instead of committed (the control:
    what sharing the CPU with the writer costs, with nothing new to catch up on)."""

    def __init__(self, path: Path, sentences: list[str], gap_s: float, publish: bool) -> None:
        super().__init__(name="writer", daemon=True)
        self.path, self.sentences, self.gap_s, self.publish = path, sentences, gap_s, publish
        self.stop = threading.Event()
        self.commits = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = random.Random(11)
        vrng = np.random.default_rng(12)
        try:
            with Store(self.path) as s:
                while not self.stop.is_set():
                    name = f"memory/new-{self.commits % 20:02d}.md"
                    rows = []
                    for k in range(50):
                        text = " ".join(rng.choice(self.sentences) for _ in range(6))
                        rows.append(
                            ChunkRow(
                                k + 1, k + 1, "", f"w{self.commits}-{k}", text, index_text(text)
                            )
                        )
                    vecs = normalize(vrng.standard_normal((50, DIMS)))
                    with contextlib.suppress(_Discard), s.transaction():
                        s.replace_file(name, "memory", FileState("x", 0, 0), 50, rows)
                        got = s.db.execute("SELECT id FROM chunks WHERE path=?", (name,))
                        ids = [r[0] for r in got]
                        s.put_vectors(
                            (i, vecs[j].astype("<f4").tobytes()) for j, i in enumerate(ids)
                        )
                        if not self.publish:
                            raise _Discard
                    self.commits += 1
                    self.stop.wait(self.gap_s)
        except BaseException as exc:  # reported by main: a bench that hides errors lies
            self.error = exc


def run_queries(idx: AgentIndex, queries: list[str]) -> tuple[list[float], int]:
    took, complete = [], 0
    for q in queries:
        t0 = time.perf_counter()
        r = idx.search(q, max_results=10, min_score=0.0)
        took.append(time.perf_counter() - t0)
        assert r["mode"] == "hybrid", r["fallback"]
        complete += all(hit["snippet"] for hit in r["results"])
    return took, complete


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--write-gap-ms", type=float, default=20.0)
    args = ap.parse_args()
    sents = real_sentences()
    queries = questions(args.queries, random.Random(5))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "w.sqlite"
        t0 = time.perf_counter()
        build(path, args.chunks)
        print(f"built {args.chunks} chunks in {time.perf_counter() - t0:.0f}s")
        cfg = Config(workspace=Path(d), indexPath=path)
        live = LiveIndex()
        with AgentIndex(cfg, readonly=True, provider=FixedQuery(), live=live) as idx:
            assert live.wait_ready(idx.store)
            run_queries(idx, queries[:20])  # warm-up
            idle, _ = run_queries(idx, queries)
            runs = {}
            for run in ("rolled back", "committing, snapshot frozen", "committing"):
                writer = Writer(path, sents, args.write_gap_ms / 1000, run != "rolled back")
                counts0 = (live.updates, live.full_loads)
                if run == "committing, snapshot frozen":  # what the commits alone cost
                    live.get = lambda store, versions: live.snapshot  # type: ignore[method-assign]
                writer.start()
                time.sleep(1.0)  # the writer is going (and the first updates have begun)
                took, complete = run_queries(idx, queries)
                writer.stop.set()
                writer.join()
                if run == "committing, snapshot frozen":
                    del live.get  # the class's again
                if writer.error is not None:
                    raise SystemExit(f"bench: the writer failed: {writer.error!r}")
                counts = (live.updates - counts0[0], live.full_loads - counts0[1])
                runs[run] = (took, complete, writer.commits, counts)
    ms = 1000
    p99_idle = percentile(idle, 99)
    print(f"{'idle':<40}p50 {statistics.median(idle) * ms:7.2f} ms  p99 {p99_idle * ms:7.2f} ms")
    for run, (took, complete, commits, (updates, full)) in runs.items():
        label = f"writer {run}"
        print(
            f"{label:<40}p50 {statistics.median(took) * ms:7.2f} ms  "
            f"p99 {percentile(took, 99) * ms:7.2f} ms  = {percentile(took, 99) / p99_idle:.2f}x "
            f"idle p99; {commits} writes of 50 chunks, {updates} updates and {full} full "
            f"reads of the snapshot, "
            f"{complete}/{len(took)} answers with every snippet"
        )
    busy, control = percentile(runs["committing"][0], 99), percentile(runs["rolled back"][0], 99)
    frozen = percentile(runs["committing, snapshot frozen"][0], 99)
    print(
        f"busy p99 / idle p99 = {busy / p99_idle:.2f} (target <= 2); busy p99 / rolled-back "
        f"writer p99 = {busy / control:.2f} (what publishing costs beyond sharing the CPU); "
        f"busy p99 / frozen-snapshot p99 = {busy / frozen:.2f} (what keeping the snapshot "
        f"current costs beyond the commits themselves)"
    )


if __name__ == "__main__":
    main()
