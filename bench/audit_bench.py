"""The memory audit's cost (issue #64): ``memindex audit`` on a generated workspace of
``--logs`` daily logs (default 500) and a MEMORY.md of about 20,000 characters,
keyword index, no daemon (the process reads the index itself), beside one
``memindex search`` process of the same run as the baseline. Prints each kind's
time (``--kind``) and the whole audit's, medians of ``--runs``, and what it found.

    python bench/audit_bench.py [--logs 500] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

KINDS = ("bootstrap", "stale", "duplicates", "conflicts", "unfindable", "secrets")
PEOPLE = ["Dana", "Priya", "Marcus", "Elin", "Tomas", "Aiko", "Ravi", "Sofia", "Jonas", "Mei"]
PEOPLE += ["Noor", "Lukas", "Amara", "Kenji", "Ines", "Oskar", "Leila", "Mateo", "Hana", "Piotr"]
THINGS = ["standup", "gym class", "piano lesson", "team lunch", "dentist", "car service"]
THINGS += ["book club", "swim practice", "yoga", "budget review", "vet visit", "rent payment"]
PLACES = ["Lisbon", "the blue room", "Porto", "the library", "the clinic", "the garage"]
ITEMS = ["blue folder", "spare key", "water bottle", "laptop charger", "umbrella", "notebook"]
CHORES = ["walked the dog", "fixed the gate", "read about sourdough", "called the bank"]
CHORES += ["cleaned the shed", "planted tomatoes", "paid the water bill", "sorted the mail"]


def workspace(root: Path, logs: int, rng: random.Random) -> None:
    (root / "memory").mkdir(parents=True)
    lines = ["# Memory", ""]
    pairs = [(who, what) for who in PEOPLE for what in THINGS]
    rng.shuffle(pairs)
    for who, what in pairs:  # one entry per person and thing, as a person keeps them
        if len("\n".join(lines)) > 19_500:
            break
        hour = f"{rng.randint(7, 19):02d}:{rng.choice(['00', '15', '30', '45'])}"
        bring = " and the ".join(rng.sample(ITEMS, 2))
        lines.append(f"- {who}'s {what} is at {hour} on {rng.choice(['Mondays', 'Fridays'])}, "
                     f"in {rng.choice(PLACES)}; bring the {bring}.")  # fmt: skip
    (root / "MEMORY.md").write_text("\n".join(lines) + "\n")
    (root / "USER.md").write_text("# User\n\n- Prefers short answers.\n- Lives in Lisbon.\n")
    day = date(2025, 6, 1)
    for k in range(logs):
        body = [f"# {day.isoformat()}", ""]
        body += [f"- {c.capitalize()}." for c in rng.sample(CHORES, 4)]
        if k % 25 == 0:  # now and then a change announced
            who, what = rng.choice(PEOPLE), rng.choice(THINGS)
            body.append(f"- {who}'s {what} moved to {rng.randint(7, 19):02d}:30 from now on.")
        (root / "memory" / f"{day.isoformat()}.md").write_text("\n".join(body) + "\n")
        day += timedelta(days=1)


def run(env: dict[str, str], ws: Path, *args: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "indexer.surfaces.cli", "--workspace", str(ws), *args],
        env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"memindex {' '.join(args)} failed: {r.stderr[-500:]}")
    return took, r.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / "state"),
               "XDG_CONFIG_HOME": str(home / "config"), "MEMINDEX_NO_DAEMON": "1"}  # fmt: skip
        ws = home / "ws"
        workspace(ws, a.logs, random.Random(7))
        took, _ = run(env, ws, "index")
        size = len((ws / "MEMORY.md").read_text())
        print(f"workspace: {a.logs} daily logs, MEMORY.md {size:,} characters; index {took:.2f} s")
        base = statistics.median(run(env, ws, "search", "standup time")[0] for _ in range(a.runs))
        print(f"baseline, one `memindex search` process: {base:.2f} s")
        for kind in KINDS:
            t = statistics.median(run(env, ws, "audit", "--kind", kind)[0] for _ in range(a.runs))
            print(f"  audit --kind {kind:<10} {t:6.2f} s")
        times, out = [], ""
        for _ in range(a.runs):
            t, out = run(env, ws, "audit", "--json")
            times.append(t)
        found = json.loads(out)
        print(f"audit, all kinds: {statistics.median(times):.2f} s (median of {a.runs}); "
              f"counts {found['counts']}; checked {found['checked']}")  # fmt: skip


if __name__ == "__main__":
    main()
