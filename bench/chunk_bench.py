"""Chunking time for very long Markdown files: markdown-it-py's parse against the
parser-free path that files past ``PARSE_MAX_LINES`` take, in the same run.

Two synthetic files near the 8 MiB size limit (``limits.maxFileBytes``): a log-like
dump of 95,000 lines of 12 words (a heading every 500 lines, two in three lines
bulleted), and the worst case for a line-based parser, 4,000,000 one-character
lines. Each is chunked (400 / 80 tokens, cl100k) with the parser forced on
(``PARSE_MAX_LINES`` raised above the file's lines) and with the shipped setting;
the best of ``--rounds`` is printed with the chunk counts.

    python bench/chunk_bench.py [--rounds 1]
"""

from __future__ import annotations

import argparse
import random
import time

import indexer.sources.chunking as chunking
from indexer.sources.tokenizer import get_counter

_WORDS = [
    *("alpha", "beta", "gamma", "delta", "garden", "deploy", "vault", "meeting"),
    *("review", "budget", "kestrel", "heron", "release", "codename", "migration"),
    *("sprint", "invoice", "travel", "dentist", "recipe", "backup", "server"),
]


def files() -> dict[str, str]:
    rnd = random.Random(7)
    lines = []
    for i in range(95_000):
        if i % 500 == 0:
            lines.append(f"## Section {i}")
        else:
            words = " ".join(rnd.choice(_WORDS) for _ in range(12))
            lines.append(("- " if i % 3 else "") + words)
    return {"95k lines of 12 words": "\n".join(lines), "4M one-character lines": "a\n" * 4_000_000}


def timed(text: str, rounds: int, parse: bool) -> tuple[float, int]:
    count = get_counter()
    saved = chunking.PARSE_MAX_LINES
    if parse:
        chunking.PARSE_MAX_LINES = text.count("\n") + 1
    try:
        best, n = float("inf"), 0
        for _ in range(rounds):
            t0 = time.perf_counter()
            n = len(chunking.chunk_markdown(text, count))
            best = min(best, time.perf_counter() - t0)
        return best, n
    finally:
        chunking.PARSE_MAX_LINES = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    get_counter()("warm up")
    print(f"PARSE_MAX_LINES = {chunking.PARSE_MAX_LINES}; best of {args.rounds}")
    print(f"{'file':<26}{'MiB':>6}{'parsed s':>10}{'shipped s':>11}{'chunks':>9}{'speed-up':>10}")
    for name, text in files().items():
        parsed, n1 = timed(text, args.rounds, parse=True)
        shipped, n2 = timed(text, args.rounds, parse=False)
        mib = len(text.encode()) / 2**20
        ratio = parsed / shipped
        print(f"{name:<26}{mib:>6.1f}{parsed:>10.2f}{shipped:>11.2f}{n2:>9}{ratio:>9.1f}x")
        if n1 != n2:
            print(f"  (the parsed path made {n1} chunks)")


if __name__ == "__main__":
    main()
