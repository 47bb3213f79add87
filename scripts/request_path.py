"""Follow one search request through memindex's modules and count how often it goes
back into a module it has already left (an architecture measure, issue #37).

How it counts: a profiler hook sees every Python function call made while
``Searcher.search`` answers one query on a small index. A call from function f in
module A to function g in module B (A != B, both in ``indexer``) is a step of the
request's path, counted once however often it repeats (a loop is read once); the
first step into B enters it, and every other step into B is a re-entry: the
request left B and came back. Calls inside a module, into the standard library or
numpy, and returns are not steps. The modules a request passes
through only to build records (``api``, ``store.records``, ``search.candidates``:
dataclasses and TypedDicts), and a dataclass made anywhere else (its generated
``__init__``), are not counted: a value crossing a boundary is not control going
back. Nor is a call an object makes on itself (the store's methods
are spread over one file per group of tables, mixed into one class): control stays
in the object. ``--strict`` counts those too (what the figures before this rule
were).

    .venv/bin/python scripts/request_path.py            # keyword search
    .venv/bin/python scripts/request_path.py --hybrid   # with the local test model
    .venv/bin/python scripts/request_path.py --live     # the daemon's path: its snapshot
    .venv/bin/python scripts/request_path.py --change   # a file change, synced

Prints each module's entries and the total re-entries.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RECORDS = ("indexer.api", "indexer.store.records", "indexer.search.candidates")
# The ranking stages' shared library and the request's state (search/stages/base.py,
# context.py): every stage of the pipeline reads them, so a search steps into them
# once from each stage by design. Counted apart (``library``), not as re-entries.
LIBRARY = ("indexer.search.stages.base", "indexer.search.stages.context")
WALK = "indexer.search.pipeline"  # the pipeline: its steps into the stages are its walk
_MADE = "__create_fn__."  # a dataclass's generated __init__: a value being made


def _module(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


Step = tuple[str, str, str, str]  # caller module, caller function, callee module, callee


def _on_itself(frame: FrameType, caller: FrameType) -> bool:
    """A method call an object makes on itself."""
    me = frame.f_locals.get("self")
    return me is not None and me is caller.f_locals.get("self")


def trace(run: Any, *, strict: bool = False) -> list[Step]:
    """Every cross-module call ``run()`` makes, in order (``strict``: an object's
    calls on itself too)."""
    steps: list[Step] = []

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee, caller = _module(frame), _module(frame.f_back)
        if callee.startswith("indexer") and caller.startswith("indexer") and callee != caller:
            if not strict and _on_itself(frame, frame.f_back):
                return
            steps.append(
                (caller, frame.f_back.f_code.co_qualname, callee, frame.f_code.co_qualname)
            )

    sys.setprofile(hook)
    try:
        run()
    finally:
        sys.setprofile(None)
    return steps


def count(steps: list[Step]) -> tuple[Counter[str], int, int, int]:
    """Entries per module (each distinct caller function -> callee function crossing
    once: a loop is one step), the re-entries (entries after a module's first), the
    steps into the stages' library (``LIBRARY``), and the re-entries that are the
    pipeline walking its stages (``WALK``: a module holding several stages is entered
    once per stage and method)."""
    entries: Counter[str] = Counter()
    walked: Counter[str] = Counter()
    seen = set()
    for step in steps:
        if step[2].startswith(RECORDS) or step[3].startswith(_MADE) or step in seen:
            continue
        seen.add(step)
        entries[step[2]] += 1
        walked[step[2]] += step[0] == WALK
    library = sum(n for m, n in entries.items() if m in LIBRARY)
    again = {m: n - 1 for m, n in entries.items() if m not in LIBRARY}
    walks = sum(min(again[m], max(0, walked[m] - 1)) for m in again)
    return entries, sum(again.values()), library, walks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hybrid", action="store_true", help="embed with the local test model")
    ap.add_argument(
        "--live", action="store_true", help="search the in-memory snapshot, as the daemon does"
    )
    ap.add_argument(
        "--change", action="store_true", help="follow a changed file's sync, not a search"
    )
    ap.add_argument("--steps", action="store_true", help="print every step")
    ap.add_argument(
        "--strict", action="store_true", help="count an object's calls on itself as steps"
    )
    a = ap.parse_args()

    from indexer.config.file import parse_config
    from indexer.engine import AgentIndex
    from indexer.search.snapshot.live import LiveIndex
    from indexer.selection import select_provider

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / "memory").mkdir(parents=True)
        (ws / "MEMORY.md").write_text(
            "# Memory\n\nThe deploy key rotates on Fridays; ask Dana before rotating.\n",
            encoding="utf-8",
        )
        for day in range(1, 6):
            (ws / "memory" / f"2026-11-0{day}.md").write_text(
                f"# Day {day}\n\nWe talked about the heron at the lake on day {day}.\n"
                "Dana fixed the deploy pipeline; error ERR-4411 went away.\n",
                encoding="utf-8",
            )
        raw: dict[str, Any] = {
            "workspace": str(ws),
            "indexPath": str(Path(tmp) / "index.sqlite"),
            "provider": {"name": "none"},
        }
        if a.hybrid:
            model = Path.home() / ".cache/memindex/models/all-MiniLM-L6-v2-f32.gguf"
            raw["provider"] = {"name": "local", "local": {"modelPath": str(model)}}
        cfg = parse_config(raw)[0]
        provider = None
        if a.hybrid:
            provider = select_provider(cfg).provider
        live = LiveIndex() if a.live else None
        with AgentIndex(cfg, provider=provider, live=live) as idx:
            idx.sync()
            if live is not None:
                assert live.wait_ready(idx.store), "the snapshot did not load"
            idx.search("heron lake")  # warm: first-use imports and caches
            if a.change:
                log = ws / "memory" / "2026-11-03.md"
                log.write_text(log.read_text() + "The heron came back.\n", encoding="utf-8")
                steps = trace(idx.sync_memory, strict=a.strict)
            else:
                steps = trace(lambda: idx.search("who fixed the deploy pipeline"), strict=a.strict)
    if a.steps:
        for step in steps:
            print(step)
    entries, again, library, walks = count(steps)
    for mod, n in entries.most_common():
        print(f"{n:3d}  {mod}")
    print(
        f"re-entries: {again}, {again - walks} besides the pipeline's walk of its stages "
        f"(distinct steps into another module: {sum(entries.values())}; into the stages' "
        f"library and the request's state: {library})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
