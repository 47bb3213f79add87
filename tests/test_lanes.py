"""The test lanes check themselves: a test left in the fast lane (not marked slow)
that starts a daemon or a gateway, or spends more than 2 s of CPU, fails saying
to mark it slow; a test that uses the suite's PostgreSQL unmarked fails too."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAST_CPU_S
from lanes import fast_lane_refuses

TESTS = Path(__file__).resolve().parent


def test_a_fast_test_may_start_no_daemon(tmp_path: Path) -> None:
    from indexer.surfaces.server import SocketServer

    with pytest.raises(AssertionError, match="mark it slow"):
        fast_lane_refuses("a daemon")
    server = SocketServer(tmp_path / "s.sock", lambda line: None)
    with pytest.raises(AssertionError, match="starts a daemon in the fast lane"):
        server.start()


@pytest.mark.slow
def test_a_daemon_is_allowed_in_the_slow_lane() -> None:
    fast_lane_refuses("a daemon")  # no error


@pytest.mark.slow
def test_the_lane_guard_fails_a_busy_unmarked_test(tmp_path: Path) -> None:
    """A copy of the suite's conftest over three tests, the fast lane run: one busy
    for 2.5 s of CPU (fails), the same marked slow (left out), one quick (passes)."""
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    shutil.copy(TESTS / "lanes.py", tmp_path / "lanes.py")
    (tmp_path / "test_busy.py").write_text(
        "import time\nimport pytest\n\n"
        "def _spin():\n"
        "    t = time.process_time()\n"
        f"    while time.process_time() - t < {FAST_CPU_S} + 0.5:\n"
        "        pass\n\n"
        "def test_busy():\n    _spin()\n\n"
        "@pytest.mark.slow\ndef test_busy_marked():\n    _spin()\n\n"
        "def test_quick():\n    assert True\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0",
         "-m", "not slow", "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "t"),
         str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert "1 failed, 1 passed, 1 deselected" in done.stdout, done.stdout + done.stderr
    assert "test_busy is in the fast lane but took" in done.stdout
