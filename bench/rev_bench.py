"""memindex beside an earlier revision of itself, as processes, in one run.

The `index` command, cold (empty state dir) and with nothing changed, on the
generated 500 daily logs of bench/index_bench.py, for the working tree and for
``--base`` (a git revision, checked out as a temporary worktree and put first on
``PYTHONPATH``; each process checks whose code it ran), alternating run by run in
ABBA order so both meet the same machine; medians and minimums of ``--runs``. Both
use this checkout's virtualenv (its dependencies).

    python bench/rev_bench.py --base 6ce198b [--runs 11]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO  # noqa: E402
from index_bench import make_daily_logs, real_sentences  # noqa: E402
from process_bench import env_for as process_env  # noqa: E402

INDEX = (
    "import sys, indexer; print(indexer.__file__, file=sys.stderr); "
    "sys.argv = ['memindex', '--config', sys.argv[1], 'index']; "
    "from indexer.surfaces.cli import main; sys.exit(main())"
)


def env_for(home: Path, tree: Path) -> dict[str, str]:
    """process_bench's environment (its own HOME and XDG dirs), with ``tree``'s code."""
    return {**process_env(home), "MEMINDEX_NO_DAEMON": "1", "PYTHONPATH": str(tree)}


def timed(config: Path, env: dict[str, str], tree: Path) -> float:
    """One ``index`` process of ``tree``'s code: run from outside any checkout, so
    that ``PYTHONPATH`` (not the current folder) says whose ``indexer`` it is."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", INDEX + "\n", str(config)],
        env=env, cwd=config.parent, check=True, capture_output=True, text=True,
    )  # fmt: skip
    took = time.perf_counter() - t0
    if str(tree) not in proc.stderr:
        raise SystemExit(f"rev_bench: the process did not run {tree}'s code: {proc.stderr[-300:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the git revision to compare with")
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rev-bench-") as tmp:
        root = Path(tmp)
        base = root / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(base),
                        args.base], check=True)  # fmt: skip
        try:
            ws = root / "ws"
            make_daily_logs(ws, 500, sentences=real_sentences())
            config = root / "memindex.toml"
            config.write_text(f'workspace = "{ws}"\n')
            trees = {f"base {args.base}": base, "this tree": REPO}
            for mode in ("cold", "no change"):
                times: dict[str, list[float]] = {name: [] for name in trees}
                for run in range(args.runs):
                    order = list(trees.items())
                    for name, tree in order if run % 2 else order[::-1]:  # ABBA: no side first
                        home = root / "home"
                        env = env_for(home, tree)
                        if mode == "cold":
                            shutil.rmtree(home / ".state", ignore_errors=True)
                        else:
                            timed(config, env, tree)  # its own index, current
                        times[name].append(timed(config, env, tree))
                print(f"\nindex ({mode}), 500 daily logs, {args.runs} runs each, ABBA order")
                for name, ts in times.items():
                    print(
                        f"  {name:<22} median {statistics.median(ts):.3f} s   min {min(ts):.3f} s"
                    )
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)],
                           check=False)  # fmt: skip


if __name__ == "__main__":
    main()
