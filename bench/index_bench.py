"""Index throughput: full index, no-change re-index and one-file edit.

Corpora: ../shared/corpora/tldr-pages (7,425 files) and a generated workspace of 500
daily logs. Baseline, measured in the same run: reading and sha256-hashing every file
(the floor for any indexer that re-hashes all files on each update, as QMD's
`update` does), so the ratios say what the mtime+size fast path buys.

    python bench/index_bench.py [--runs 3]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import shared  # noqa: E402

from indexer.config import Config, ExtraPath  # noqa: E402
from indexer.engine import AgentIndex  # noqa: E402
from indexer.sources.discovery import discover  # noqa: E402

WORDS = [
    "gateway",
    "kestrel",
    "zigbee",
    "sensor",
    "backup",
    "restic",
    "garden",
    "tomato",
    "basil",
    "lisbon",
    "flight",
    "dashboard",
    "timeout",
    "mqtt",
    "broker",
    "certificate",
    "deploy",
    "rollback",
    "meeting",
    "calendar",
    "invoice",
    "budget",
    "sourdough",
    "starter",
    "bakery",
    "sister",
    "visit",
    "portuguese",
    "lesson",
    "flashcards",
    "kernel",
    "update",
    "reboot",
    "service",
    "config",
    "yaml",
    "token",
    "secret",
    "rotate",
    "weekly",
    "report",
    "sprint",
    "review",
]


def real_sentences() -> list[str]:
    """English sentences from tldr-pages (descriptions and example captions)."""
    out: list[str] = []
    for page in sorted((shared("corpora", "tldr-pages") / "pages" / "common").glob("*.md")):
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith(("> ", "- ")) and "More information" not in line:
                out.append(line[2:].strip().rstrip(":"))
    return out


def make_daily_logs(root: Path, n: int, seed: int = 7, sentences: list[str] | None = None) -> None:
    """``n`` daily logs of sessions and bullet points. With ``sentences`` the bullets
    are real English; without, they are drawn from a 47-word vocabulary (a worst
    case for BM25: every chunk holds every word)."""
    rng = random.Random(seed)
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\n- Long-term facts live here.\n")
    for d in range(n):
        lines = [f"# 2025-{1 + d // 28 % 12:02d}-{1 + d % 28:02d} (day {d})", ""]
        for s in range(rng.randint(2, 5)):
            lines += [f"## Session {s + 1}", ""]
            for _ in range(rng.randint(4, 12)):
                if sentences:
                    sent = " ".join(rng.choice(sentences) for _ in range(2))
                else:
                    sent = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24)))
                lines.append(f"- {sent.capitalize()}. Ref KESTREL-{rng.randint(1, 9999):04d}.")
            if rng.random() < 0.3:
                lines += ["", "```bash", "restic -r /mnt/nas backup ~/kestrel", "```"]
            lines.append("")
        (root / "memory" / f"day-{d:04d}.md").write_text("\n".join(lines))


def read_and_hash_all(cfg: Config) -> float:
    t0 = time.perf_counter()
    for f in discover(cfg):
        hashlib.sha256(Path(f.abs).read_bytes()).hexdigest()
    return time.perf_counter() - t0


def bench(name: str, cfg: Config, edit: Path, runs: int) -> None:
    full, noop, one, base = [], [], [], []
    for r in range(runs):
        if cfg.indexPath and cfg.indexPath.exists():
            for suffix in ("", "-wal", "-shm"):
                Path(str(cfg.indexPath) + suffix).unlink(missing_ok=True)
        with AgentIndex(cfg) as idx:
            t0 = time.perf_counter()
            rep = idx.sync()
            full.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            rep2 = idx.sync()
            noop.append(time.perf_counter() - t0)
            assert rep2.chunksWritten == 0 and rep2.unchanged == rep.files
            if edit is not None:
                original = edit.read_text()
                try:
                    edit.write_text(original + f"\n- bench edit {r}\n")
                    t0 = time.perf_counter()
                    rep3 = idx.sync()
                    one.append(time.perf_counter() - t0)
                    assert rep3.updated == 1
                finally:
                    edit.write_text(original)
                idx.sync()
        base.append(read_and_hash_all(cfg))
    m = statistics.median
    print(f"\n{name}: {rep.files} files, {rep.chunksWritten} chunks (median of {runs} runs)")
    print(f"  full index            {m(full):8.3f} s   {rep.files / m(full):8.0f} files/s")
    print(f"  no-change re-index    {m(noop):8.3f} s")
    if one:
        print(f"  one file edited       {m(one):8.3f} s")
    print(f"  baseline read+sha256  {m(base):8.3f} s   (every file, no indexing)")
    print(
        f"  ratios: no-change / baseline = {m(noop) / m(base):.2f}, "
        f"full / baseline = {m(full) / m(base):.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    tldr = shared("corpora", "tldr-pages")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        # tldr-pages is read-only: index it in place as an extra path, edit a copy-free
        # file only in the generated workspace.
        ws = tmp / "tldr-ws"
        ws.mkdir()
        cfg = Config(
            workspace=ws, extraPaths=(ExtraPath(tldr / "pages"),), indexPath=tmp / "tldr.sqlite"
        )
        bench("tldr-pages", cfg, None, args.runs)  # type: ignore[arg-type]
        logs = tmp / "daily"
        make_daily_logs(logs, 500, sentences=real_sentences())
        cfg2 = Config(workspace=logs, indexPath=tmp / "daily.sqlite")
        bench("500 daily logs", cfg2, logs / "memory" / "day-0250.md", args.runs)


if __name__ == "__main__":
    main()
