"""``memory_curated``: the annotated entries of MEMORY.md and USER.md, read from the
files as memory_get reads them (they are small, and always current), for OpenClaw's
deterministic recall lane: the entries with trigger phrases (``triggers``) and the
entries of the active repositories (``projects``), the most important first."""

from __future__ import annotations

from indexer.api import CuratedEntry, CuratedRequest, CuratedResponse
from indexer.config import Config
from indexer.errors import NotFound, PathRefused, checkpoint
from indexer.search.documents import read_document
from indexer.sources.chunking import split_lines
from indexer.sources.curated import (
    INVALID_PROJECT,
    entry_spans,
    meta_of,
    project_keys,
    strip_annotations,
)

__all__ = ["curated_entries"]

_FILES = ("MEMORY.md", "USER.md")  # what OpenClaw's lane 1 reads (memory.md is not)
_SNIPPET_CHARS = 700
_DEFAULT_LIMIT = {"triggers": 512, "projects": 48}


def curated_entries(cfg: Config, req: CuratedRequest) -> CuratedResponse:
    active = set(req.active_projects)
    if req.kind == "projects" and not active:
        return {"results": []}
    found: list[CuratedEntry] = []
    for name in _FILES:
        try:
            _display, text = read_document(cfg, name)
        except (NotFound, PathRefused):
            continue
        lines = split_lines(text)
        heading = ""
        for first, last in entry_spans(lines):
            checkpoint()  # the client still waits
            body = "\n".join(lines[first : last + 1])
            if lines[first].startswith("#"):
                heading = lines[first].lstrip("#").strip()
            meta = meta_of(name, body)
            keys = project_keys(meta.project_key)
            if meta.project_key == INVALID_PROJECT:
                continue
            if req.kind == "triggers":
                if not meta.triggers or (keys and active and not set(keys) <= active):
                    continue
            elif not keys or not set(keys) <= active:
                continue
            entry: CuratedEntry = {
                "path": name,
                "startLine": first + 1,
                "endLine": last + 1,
                "score": 0.0,
                "snippet": strip_annotations(body).strip()[:_SNIPPET_CHARS],
                "source": "memory",
                "heading": heading,
            }
            if meta.importance is not None:
                entry["importance"] = meta.importance
            if meta.triggers:
                entry["triggers"] = meta.triggers
            if meta.project_key:
                entry["projectKey"] = meta.project_key
            found.append(entry)
    found.sort(key=lambda e: (-(e.get("importance") or 0), e["path"], e["startLine"]))
    return {"results": found[: req.limit or _DEFAULT_LIMIT[req.kind]]}
