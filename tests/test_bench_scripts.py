"""The benchmark scripts are not run by the suite (they read ../shared and take
minutes), but each must still import against the current code and parse its
options: a refactor that breaks one shows up here, not on the next bench run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from daemon_util import child_env

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if "argparse" in p.read_text(encoding="utf-8"))


def test_the_bench_scripts_are_found() -> None:
    assert {"eval.py", "hybrid_bench.py", "writer_bench.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_script_imports_and_parses_its_options(script: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--help"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage:" in proc.stdout
