"""``memory_get``: lines of a memory file or a session transcript, by the same path
rules as the index (``discovery.resolve_get_path``) and read through ``safefs``; a
transcript's lines are its source's (``sources.transcripts.get``)."""

from __future__ import annotations

from indexer.api import GetRequest, GetResponse
from indexer.config import Config
from indexer.sources.chunking import split_lines
from indexer.sources.discovery import resolve_get_path
from indexer.sources.files import lines_result, read_text, reading
from indexer.sources.transcripts.get import transcript_lines

__all__ = ["get_lines", "read_document"]


def read_document(cfg: Config, raw: str) -> tuple[str, str]:
    """(display path, text) of the memory file ``raw`` under memory_get's rules
    (``resolve_get_path``, then a read through ``safefs``)."""
    target = resolve_get_path(cfg, raw)
    with reading(target.display):
        text = read_text(
            target.root,
            target.parts,
            cfg.limits.maxFileBytes,
            exact=True,
            links=cfg.limits.allowHardLinks,
        ).text
    return target.display, text


def get_lines(cfg: Config, req: GetRequest, forgotten: frozenset[str] = frozenset()) -> GetResponse:
    """The memory_get answer for ``req``; ``forgotten``: sessions forgotten before, as
    the index keeps them (a database restored from before a forget no longer says)."""
    got = transcript_lines(cfg, req, forgotten)
    if got is not None:
        return got
    display, text = read_document(cfg, req.path)
    return _slice(display, text, req.start, req.lines, cfg.limits.maxGetBytes)


def _slice(path: str, text: str, first: int, count: int | None, max_bytes: int) -> GetResponse:
    """Lines ``first`` .. ``first + count - 1`` of ``text``, at most ``max_bytes``."""
    all_lines = split_lines(text)
    end = len(all_lines) if count is None else min(len(all_lines), first - 1 + count)
    picked: list[str] = []
    size = 0
    for line in all_lines[first - 1 : end]:
        n = len(line.encode("utf-8")) + 1
        if picked and size + n > max_bytes:
            return lines_result(path, picked, first, len(all_lines), True)
        picked.append(line)
        size += n
    return lines_result(path, picked, first, len(all_lines), False)
