"""The text the full-text index is built from, shared by the writer and the query
parser (so both split CJK the same way). Standard library only."""

from __future__ import annotations

import functools
import re

__all__ = ["cjk", "index_text"]

_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"


@functools.cache
def cjk(run: bool = False) -> re.Pattern[str]:
    """One CJK character (or a run of them). Compiled on first use: these wide
    character classes take ~8 ms to compile, which a process that never reads text
    (a no-change ``memindex index``) should not pay."""
    return re.compile(f"[{_CJK_CHARS}]" + ("+" if run else ""))


def index_text(text: str) -> str:
    """Text as handed to the FTS tokenizer: CJK characters become separate tokens."""
    if not cjk().search(text):
        return text
    return cjk().sub(lambda m: f" {m.group(0)} ", text)
