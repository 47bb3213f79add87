"""What ``memindex-qmd`` keeps and reads: its collections (``collections.json``),
the index over them, the documents catalogue the QMD manager reads, and QMD's
result objects for a search (used by the command line and by the warm daemon)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from indexer.api import MAX_RESULTS, QmdResult, SearchResponse
from indexer.config import Config, ExtraPath
from indexer.engine import AgentIndex
from indexer.sources.discovery import roots_for
from indexer.sources.patterns import glob_match
from indexer.store import IndexStore, private_dir, private_file
from indexer.store.sqlite.qmd_catalogue import Catalogue
from indexer.surfaces.qmd.common import MODES, cache_dir, config_dir

__all__ = [
    "QmdError",
    "config_for",
    "load_collections",
    "refresh_catalogue",
    "save_collections",
    "search_items",
]


class QmdError(Exception):
    pass


# -- collections ---------------------------------------------------------------------


def load_collections() -> list[dict[str, str]]:
    f = config_dir() / "collections.json"
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except ValueError as exc:
        raise QmdError(f"{f} is not valid JSON: {exc}") from exc
    cols = data.get("collections", []) if isinstance(data, dict) else []
    return [c for c in cols if isinstance(c, dict) and {"name", "path"} <= set(c)]


def save_collections(cols: list[dict[str, str]]) -> None:
    d = config_dir()
    private_dir(d)
    tmp = d / f".collections.{os.getpid()}.tmp"
    private_file(tmp)  # 0600, as the index
    tmp.write_text(json.dumps({"collections": cols}, indent=1), encoding="utf-8")
    os.replace(tmp, d / "collections.json")


def config_for(base: Config, cols: list[dict[str, str]]) -> Config:
    """One index over the collections: the workspace is an empty folder of ours, every
    collection an extra path (so only collection files are indexed)."""
    private_dir(cache_dir() / "memindex-qmd")
    ws = cache_dir() / "memindex-qmd" / "workspace"
    private_dir(ws)
    extras = tuple(ExtraPath(Path(c["path"]), c.get("pattern") or "**/*.md") for c in cols)
    return replace(
        base,
        workspace=ws,
        extraPaths=extras,
        agentId=None,
        indexPath=cache_dir() / "memindex-qmd" / "index.sqlite",
        sessions=replace(base.sessions, enabled=False),
    )


class _Locator:
    """Maps indexed display paths to the (collection, path relative to it) of every
    collection that holds the file (collections may overlap). The roots and the
    collections' resolved folders are worked out once, not per result."""

    def __init__(self, cfg: Config, cols: list[dict[str, str]]) -> None:
        self.roots = [r for r in roots_for(cfg)[1:] if not r.is_file]
        self.bases = [
            (c["name"], Path(c["path"]).expanduser().resolve(), c.get("pattern") or "**/*.md")
            for c in cols
        ]

    def __call__(self, display: str) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for root in self.roots:
            prefix = root.display + "/"
            if not display.startswith(prefix):
                continue
            absolute = root.real / display[len(prefix) :]
            for name, base, pattern in self.bases:
                try:
                    rel = absolute.relative_to(base).as_posix()
                except ValueError:
                    continue
                if glob_match(rel, pattern) and (name, rel) not in found:
                    found.append((name, rel))
        return found


# -- the documents catalogue the manager reads --------------------------------------


def _catalogue() -> Catalogue:
    return Catalogue(cache_dir() / "qmd" / "index.sqlite")


def refresh_catalogue(cfg: Config, cols: list[dict[str, str]], store: IndexStore) -> int:
    states = store.file_states("memory")
    locate = _Locator(cfg, cols)
    rows = []
    for display, st in states.items():
        for name, rel in locate(display):
            rows.append((name, rel, Path(rel).stem, st.hash))
    with _catalogue() as catalogue:
        catalogue.replace_all(rows)
    return len(rows)


# -- search ---------------------------------------------------------------------------


def search_items(
    cfg: Config,
    cols: list[dict[str, str]],
    mode: str,
    query: str,
    n: int,
    names: list[str],
    search: Callable[[dict[str, object]], SearchResponse],
) -> list[QmdResult]:
    """QMD's result objects for a search; ``search``: memory_search through the
    method table (the direct path's service, or the daemon's). A document indexed
    since the last ``update`` (the warm daemon watches the collections) is put in
    the catalogue first: it was left out of the results."""
    known = {c["name"] for c in cols}
    for name in names:
        if name not in known:
            raise QmdError(f"Collection not found: {name}")
    if mode not in MODES:
        raise QmdError(f"Unknown search mode: {mode}")
    # Four chunks per document asked for (SearchRequest caps it at MAX_RESULTS); all
    # it allows when only some collections are asked for (the filter is ours, after).
    many = max(1, n) * 4 if not names else MAX_RESULTS
    params: dict[str, object] = {"query": query, "maxResults": many, "minScore": 0.0}
    res = search({**params, "mode": MODES[mode]})["results"]
    locate = _Locator(cfg, cols)
    items: list[QmdResult] = []
    seen: set[tuple[str, str]] = set()
    refreshed = False
    with _catalogue() as catalogue:  # one connection for the whole result list
        for r in res:
            where = next((w for w in locate(r["path"]) if not names or w[0] in names), None)
            if where is None or where in seen:
                continue  # one entry per document (its best chunk), as QMD does
            docid = catalogue.docid(*where)
            if docid is None and not refreshed:
                refreshed = True
                with AgentIndex(cfg, readonly=True) as idx:
                    refresh_catalogue(cfg, cols, idx.store)
                docid = catalogue.docid(*where)
            if docid is None:
                continue
            seen.add(where)
            start, end = r["snippetStartLine"], r["snippetEndLine"]
            header = f"@@ -{start},{end - start + 1} @@ (0 before, 0 after)"
            items.append(
                {
                    "docid": docid,
                    "score": round(float(r["score"]), 2),
                    "collection": where[0],
                    "file": f"qmd://{where[0]}/{where[1]}",
                    "title": r.get("heading") or Path(where[1]).stem,
                    "snippet": f"{header}\n{r['snippet']}",
                }
            )
            if len(items) >= n:
                break
    return items
