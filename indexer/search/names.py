"""Names a question asks about that memory never mentions.

"What did Caroline research?" asked of a memory where no Caroline appears cannot be
answered from it, however well its other words match ("research"). A name here is
a capitalised word inside a sentence (not its first word; "Caroline's" counts as
"caroline"), not a stop word, a month or a weekday; it is absent when no chunk of
the searched sources holds it as a word. The relevance signal of such a question is
capped (``search.run``), so ``abstain`` declines it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from indexer.search.query import STOP_WORDS
from indexer.search.when_rules import MONTH_NAMES, WEEKDAYS
from indexer.store.records import KeywordQuery

if TYPE_CHECKING:
    from indexer.store import IndexStore

__all__ = ["ABSENT_NAME_RELEVANCE", "absent_name", "names_in"]

ABSENT_NAME_RELEVANCE = 0.05  # the relevance of a question about a name memory lacks
_WORD = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*")
_SENTENCE_END = re.compile(r"[.!?:]\s*$")
_MAX_NAMES = 4


def names_in(text: str) -> list[str]:
    """The names ``text`` asks about, lower-cased, in order, at most four."""
    out: list[str] = []
    for i, m in enumerate(_WORD.finditer(text[:2000])):
        if i == 0 or _SENTENCE_END.search(text[: m.start()]):
            continue  # a sentence's first word is capitalised anyway
        word = re.split(r"['\u2019-]", m.group(0))[0]
        if len(word) < 3 or not word[0].isupper() or not word[1:].islower():
            continue
        low = word.lower()
        if low in STOP_WORDS or low in MONTH_NAMES or low in WEEKDAYS or low in out:
            continue
        out.append(low)
        if len(out) == _MAX_NAMES:
            break
    return out


def absent_name(store: IndexStore, text: str, sources: Sequence[str] | None) -> str | None:
    """The first name ``text`` asks about that no chunk of ``sources`` holds."""
    for name in names_in(text):
        found = store.fts_search(KeywordQuery((), ((name,),)), 5, sources)
        if not any(name in row.text.lower() for row in found):
            return name
    return None
