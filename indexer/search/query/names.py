"""Names a question asks about that memory never mentions.

"What did Caroline research?" asked of a memory where no Caroline appears cannot be
answered from it, however well its other words match ("research"). A name here is
a capitalised word inside a sentence (not its first word; "Caroline's" counts as
"caroline"), not a stop word, a month or a weekday. Only when *every* name of the
question is absent from the searched sources (as the keyword index matches a word:
"Smiths" finds "Smith", a file's path counts) is the relevance of the question
capped (``search.run``), so ``abstain`` declines it: a capitalised ordinary word
("Where does Dana live (Lisbon or Porto)?", a German noun) never decides alone
while a name the memory holds is there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from indexer.search.query.parse import STOP_WORDS
from indexer.search.query.when_rules import MONTH_NAMES, WEEKDAYS
from indexer.store.records import KeywordQuery

if TYPE_CHECKING:
    from indexer.store import IndexStore

__all__ = ["ABSENT_NAME_RELEVANCE", "all_names_absent", "names_in"]

ABSENT_NAME_RELEVANCE = 0.05  # the relevance of a question about names memory lacks
_WORD = re.compile(r"[^\W\d_][^\W\d_'\u2019-]*")
_SENTENCE_END = re.compile(r"[.!?:]\s*$")
_MAX_NAMES = 4
_MAX_CHARS = 2000


def names_in(text: str) -> list[str]:
    """The names ``text`` asks about, lower-cased, in order, at most four; none in
    a text written in Title Case (every word capitalised says nothing)."""
    text = text[:_MAX_CHARS]
    words = list(_WORD.finditer(text))
    capitals = sum(1 for m in words[1:] if m.group(0)[0].isupper())
    if capitals >= 3 and capitals * 2 > len(words) - 1:
        return []
    out: list[str] = []
    for i, m in enumerate(words):
        if i == 0 or _SENTENCE_END.search(text, 0, m.start()):
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


def all_names_absent(
    store: IndexStore, text: str, sources: Sequence[str] | None, shown: Sequence[str]
) -> str | None:
    """The first name of ``text`` when it names someone and no name it names is in
    ``sources``, else None. ``shown``: the texts of the best hits (lower-cased), a
    cheap first look before the keyword index is asked."""
    names = names_in(text)
    if not names or any(re.search(rf"\b{re.escape(n)}\b", t) for n in names for t in shown):
        return None  # ("tim" is not in "time")
    for name in names:
        if store.fts_search(KeywordQuery((), ((name,),)), 1, sources):
            return None
    return names[0]
