"""scripts/setup_venv.sh (demo.sh's and test.sh's setup): an install that is current
is not done again — also when it was made with more extras (the test suite's
install serves the demo; it reinstalled, 27.6 s, issue #63) — and one that is not
current is."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _repo(tmp_path: Path) -> Path:
    """A repository's setup pieces, with a .venv whose python runs pip as a fake
    (it notes the call) and anything else as this interpreter."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup_venv.sh", root / "scripts")
    shutil.copy(REPO / "pyproject.toml", root)
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "python"
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = "-m" ]; then echo "$*" >> "{root}/pip-calls"; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    fake.chmod(0o755)
    (bin_dir / "memindex").write_text("#!/bin/sh\n")
    (bin_dir / "memindex").chmod(0o755)
    return root


def _setup(root: Path, extras: str) -> str:
    done = subprocess.run(
        ["bash", "-c", f'set -euo pipefail; . scripts/setup_venv.sh; setup_venv "{extras}"'],
        cwd=root, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout


def _pip_calls(root: Path) -> list[str]:
    calls = root / "pip-calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_an_install_with_more_extras_serves_fewer(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    want = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
    (root / ".venv" / ".memindex-installed-dev,local").write_text(want + "\n")
    for extras in ("", "local", "dev", "local,dev"):
        assert "up to date" in _setup(root, extras)
    assert _pip_calls(root) == []
    # an extra the install has not: installed
    assert "installing memindex[postgresql]" in _setup(root, "postgresql")
    assert any("install" in c and ".[postgresql]" in c for c in _pip_calls(root))


def test_a_changed_pyproject_installs_again(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / ".venv" / ".memindex-installed").write_text("an older pyproject\n")
    assert "installing memindex" in _setup(root, "")
    assert any("install" in c for c in _pip_calls(root))
    assert "up to date" in _setup(root, "")  # the stamp now says this pyproject
