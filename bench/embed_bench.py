"""Local embedding throughput: memindex's provider next to raw llama-cpp-python.

Both run the same GGUF model (all-MiniLM-L6-v2, built by scripts/build_test_model.py)
on the same chunks of ~400 tokens (cl100k) cut by memindex's chunker from
../shared/corpora/tldr-pages, in the same process, alternating, several rounds.
Raw llama-cpp-python uses its defaults (as a user would first try) and the tuned
settings memindex uses, so the table shows both the tuning gain and the overhead.
memindex runs with each way of mixing line windows into a chunk's vector
(providers/local_gguf.py: ``segments`` as shipped, ``passes`` as before) and with
line windows off (the provider alone against raw tuned). ``--model e5-small`` runs
multilingual-e5-small (scripts/build_e5_model.py) instead; the provider then puts
e5's ``passage: `` before each chunk, the raw runs do not (two tokens).

    python bench/embed_bench.py [--chunks 96] [--rounds 3] [--model minilm|e5-small]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import LOCAL_MODELS, local_model, shared  # noqa: E402

from indexer.sources.chunking import chunk_markdown  # noqa: E402
from indexer.sources.tokenizer import get_counter  # noqa: E402
from providers.local_gguf import WINDOW_MODES, LocalGGUFProvider  # noqa: E402


def chunks(n: int) -> list[str]:
    count = get_counter()
    out: list[str] = []
    text: list[str] = []
    for page in sorted((shared("corpora", "tldr-pages") / "pages" / "common").glob("*.md")):
        text.append(page.read_text(encoding="utf-8"))
        if len(text) == 8:  # several pages together make ~400-token chunks
            out += [c.text for c in chunk_markdown("\n\n".join(text), count)]
            text = []
        if len(out) >= n:
            break
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", choices=LOCAL_MODELS, default="minilm")
    args = ap.parse_args()
    from llama_cpp import Llama

    model = local_model(args.model)
    texts = chunks(args.chunks)
    toks = get_counter()(texts)
    mine = LocalGGUFProvider(model)
    tuned = Llama(
        model_path=str(model),
        embedding=True,
        n_ctx=512,
        n_batch=512,
        n_ubatch=512,
        flash_attn=True,
        n_threads=os.cpu_count(),
        verbose=False,
    )
    default = Llama(model_path=str(model), embedding=True, verbose=False)

    def run_raw(llm: Llama) -> float:
        t0 = time.perf_counter()
        llm.embed(texts, normalize=True, truncate=True)
        return time.perf_counter() - t0

    def run_mine(windows: bool, pooling: str = "segments") -> float:
        mine.line_windows = windows  # the same loaded model, windows on or off
        mine.window_pooling = pooling
        t0 = time.perf_counter()
        mine.embed_all(texts)
        return time.perf_counter() - t0

    shipped = LocalGGUFProvider.window_pooling
    runs: dict[str, Callable[[], float]] = {
        f"memindex provider ({shipped})": lambda: run_mine(True, shipped),
        **{
            f"memindex, windows {mode}": partial(run_mine, True, mode)
            for mode in WINDOW_MODES
            if mode != shipped
        },
        "memindex, no windows": lambda: run_mine(False),
        "raw llama-cpp tuned": lambda: run_raw(tuned),
        "raw llama-cpp defaults": lambda: run_raw(default),
    }
    res: dict[str, list[float]] = {name: [] for name in runs}
    run_mine(True, shipped)  # warm up
    for _ in range(args.rounds):
        for name, run in runs.items():
            res[name].append(run())
    print(
        f"{model.name}: {len(texts)} chunks, mean {statistics.mean(toks):.0f} cl100k tokens "
        f"(max {max(toks)}), {args.rounds} rounds, {os.cpu_count()} threads"
    )
    base = len(texts) / statistics.median(res["raw llama-cpp tuned"])
    for name, times in res.items():
        rate = len(texts) / statistics.median(times)
        print(f"  {name:24s} {rate:7.1f} chunks/s  ({rate / base:.2f}x raw tuned)")


if __name__ == "__main__":
    main()
