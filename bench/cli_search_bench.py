"""A hybrid search from the command line, per bundled model: the process reading the
index itself (loading the model: ``--no-daemon``) beside the second call, answered
by the daemon the first call started (issue #63). Median of ``--runs`` processes
each, on the example workspace, with its own HOME and state in a temporary folder.

    python bench/cli_search_bench.py [--runs 5] [--models minilm,e5-small]

A model not pulled (``memindex model pull NAME``) is skipped and said so.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUERY = "what did we decide about the kitchen renovation budget"


def _cli(env: dict[str, str], conf: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexer.surfaces.cli", "--config", str(conf), *args],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def _timed(env: dict[str, str], conf: Path, *args: str) -> float:
    t0 = time.perf_counter()
    r = _cli(env, conf, *args)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"memindex {' '.join(args)} failed: {r.stderr[-500:]}")
    return took


def bench_model(name: str, runs: int) -> tuple[float, float] | None:
    sys.path.insert(0, str(REPO))
    from providers.auto import model_cache
    from providers.models import MODELS

    path = model_cache() / MODELS[name].file
    if not path.exists():
        print(f"{name}: not pulled (memindex model pull {name}): skipped")
        return None
    with tempfile.TemporaryDirectory(prefix="mi-cli-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "HOME": str(root), "XDG_STATE_HOME": str(root / "state"),
               "XDG_CONFIG_HOME": str(root / "config")}  # fmt: skip
        env.pop("MEMINDEX_NO_DAEMON", None)
        conf = root / "c.toml"
        conf.write_text(
            f'workspace = "{REPO / "examples" / "workspace"}"\n'
            f'[provider.local]\nmodelPath = "{path}"\n[server]\nsocket = "{root / "s.sock"}"\n',
            encoding="utf-8",
        )
        _cli(env, conf, "index")
        direct = [_timed(env, conf, "search", QUERY, "--no-daemon") for _ in range(runs)]
        _timed(env, conf, "search", QUERY)  # the first call: starts the daemon
        deadline = time.monotonic() + 120
        while not (root / "s.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2.0)  # its first sync
        warm = [_timed(env, conf, "search", QUERY) for _ in range(runs)]
        _cli(env, conf, "serve", "--stop")
    return statistics.median(direct), statistics.median(warm)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--models", default="minilm,e5-small")
    args = ap.parse_args()
    print("model      | reading the index itself (s) | through the daemon (s) | ratio")
    for name in args.models.split(","):
        got = bench_model(name, args.runs)
        if got is not None:
            d, w = got
            print(f"{name:<10} | {d:28.2f} | {w:22.2f} | {d / w:5.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
