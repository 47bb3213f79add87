"""Round trips to PostgreSQL per search, by statement, next to SQLite's time per search
on the same corpus and queries.

Indexes ``--logs`` generated daily logs (real tldr-pages sentences) into SQLite and
into a new database of the bench's PostgreSQL, then runs ``--queries`` searches of
three real words through the daemon's read path (``AgentRuntime.read``: a pooled
reader, the in-memory snapshot once it is loaded) and counts every statement psycopg
sends (its ``Cursor.execute``), per search. ``--no-snapshot`` searches the database
itself, as a one-shot ``memindex search`` does.

    python bench/pg_roundtrips.py [--logs 1000] [--queries 200] [--store pgserver]
                                  [--no-snapshot]
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import pg_url  # noqa: E402
from hybrid_bench import questions  # noqa: E402
from index_bench import make_daily_logs, real_sentences  # noqa: E402

from indexer.api import parse  # noqa: E402
from indexer.config import Config  # noqa: E402
from indexer.search.snapshot.live import LiveIndex  # noqa: E402
from indexer.surfaces.agent import AgentRuntime  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--logs", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--store", default="pgserver", help="pgserver or a postgresql:// URL")
    ap.add_argument("--no-snapshot", action="store_true", help="search the store itself")
    args = ap.parse_args()
    import psycopg

    sentences = real_sentences()
    queries = questions(args.queries, random.Random(3))
    counts: collections.Counter[str] = collections.Counter()
    plain = psycopg.Cursor.execute

    def counted(self: psycopg.Cursor[object], query: object, *a: object, **k: object) -> object:
        counts[" ".join(str(query).split())[:90]] += 1
        return plain(self, query, *a, **k)  # type: ignore[arg-type]

    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"
        make_daily_logs(ws, args.logs, sentences=sentences)
        for store in ("sqlite", "postgresql"):
            cfg = Config(workspace=ws, indexPath=Path(d) / "index.sqlite")
            if store == "postgresql":
                url = pg_url(args.store, f"roundtrips_{int(time.time())}")
                cfg = replace(cfg, store=replace(cfg.store, url=url))
            rt = AgentRuntime(cfg)
            if args.no_snapshot:
                rt.live = LiveIndex(min_chunks=10**12)
            rt.writer.sync()
            reqs = [parse("memory_search", {"query": q})[1] for q in queries]
            for r in reqs[:20]:  # warm: pooled readers, the snapshot loaded
                rt.read(lambda s, r=r: s.search(r))  # type: ignore[misc]
            rt.live.wait_ready(rt.writer.store)
            psycopg.Cursor.execute = counted  # type: ignore[method-assign]
            counts.clear()
            t0 = time.perf_counter()
            for r in reqs:
                rt.read(lambda s, r=r: s.search(r))  # type: ignore[misc]
            ms = (time.perf_counter() - t0) / len(reqs) * 1000
            psycopg.Cursor.execute = plain  # type: ignore[method-assign]
            trips = sum(counts.values()) / len(reqs)
            print(f"{store}: {ms:.2f} ms per search, {trips:.1f} statements per search")
            for q, n in counts.most_common():
                print(f"  {n / len(reqs):5.2f}  {q}")
            rt.close()


if __name__ == "__main__":
    main()
