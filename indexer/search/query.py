"""Query parsing: what a memory_search query means, and the text the FTS index is
built from.

Query rules (ordinary questions must return results):

* words are OR-ed and ranked by BM25 (never AND-ed);
* English stop words are dropped, unless the query has nothing else;
* ``"quoted phrases"`` are required and matched as phrases;
* exact tokens — IDs, paths, error codes, config keys (``KESTREL-0429``,
  ``src/app.py``, ``memory.qmd.paths``) — are matched as phrases of their parts, and
  chunks containing them literally rank first;
* CJK text (no spaces between words) is indexed one character per token and
  queried as overlapping character bigrams.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from indexer.sources.text import cjk
from indexer.store.records import KeywordQuery

__all__ = ["STOP_WORDS", "ParsedQuery", "parse_query", "stem_prefix"]

_WORD = re.compile(r"[^\W_]+")
_PHRASE = re.compile(r'"([^"]*)"')
_EXACT_PIECE = re.compile(r"^[^\W_]+(?:[-_./:#@+][^\W_]+)+$")
_TRIM = "\"'`()[]{}<>,;!?*"

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "won",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
    ]
)


@dataclass
class ParsedQuery:
    required: list[list[str]] = field(default_factory=list)  # quoted phrases
    terms: list[str] = field(default_factory=list)  # OR-ed words (stop words removed)
    exact: list[str] = field(default_factory=list)  # literal tokens, lower-cased
    exact_parts: list[list[str]] = field(default_factory=list)
    cjk: list[str] = field(default_factory=list)  # bigrams (or single characters)
    _stems: list[str] | None = field(default=None, repr=False)

    def empty(self) -> bool:
        return not (self.required or self.terms or self.exact_parts or self.cjk)

    def keyword_query(self) -> KeywordQuery:
        """What the store searches: required phrases AND-ed, everything else OR-ed."""
        optional: list[tuple[str, ...]] = [(t,) for t in self.terms]
        optional += [tuple(p) for p in self.exact_parts]
        optional += [tuple(g) for g in self.cjk]
        return KeywordQuery(tuple(tuple(p) for p in self.required), tuple(optional))

    def literal_needles(self) -> list[str]:
        """Strings whose literal presence marks an exact hit."""
        return self.exact + [" ".join(p) for p in self.required if p]

    def match_words(self) -> list[str]:
        return self.terms + [w for p in self.exact_parts for w in p]

    def word_stems(self) -> list[str]:
        """Per query word, the prefix a matching word must start with (a cheap
        stand-in for the porter stemmer when marking matching lines)."""
        if self._stems is None:
            self._stems = list(dict.fromkeys(stem_prefix(w) for w in self.match_words()))
        return self._stems


def _split_words(text: str) -> tuple[list[str], list[str]]:
    """(latin-ish words, CJK runs) of ``text``, lower-cased."""
    runs = cjk(run=True).findall(text)
    rest = cjk(run=True).sub(" ", text)
    return [w.lower() for w in _WORD.findall(rest)], runs


def parse_query(query: str) -> ParsedQuery:
    q = ParsedQuery()
    words: list[str] = []
    cjk_runs: list[str] = []

    def take_phrase(m: re.Match[str]) -> str:
        ws, runs = _split_words(m.group(1))
        parts = ws + [c for run in runs for c in run]
        if parts:
            q.required.append(parts)
        return " "

    rest = _PHRASE.sub(take_phrase, query)
    for piece in rest.split():
        piece = piece.strip(_TRIM).rstrip(".")
        if not piece:
            continue
        if _EXACT_PIECE.match(piece) and not cjk().search(piece):
            parts = [w.lower() for w in _WORD.findall(piece)]
            q.exact.append(piece.lower())
            q.exact_parts.append(parts)
            continue
        ws, runs = _split_words(piece)
        words.extend(ws)
        cjk_runs.extend(runs)
    seen: set[str] = set()
    kept = [w for w in words if w not in STOP_WORDS]
    for w in kept or words:
        if w not in seen:
            seen.add(w)
            q.terms.append(w)
    for run in cjk_runs:
        grams = [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
        for g in grams:
            if g not in q.cjk:
                q.cjk.append(g)
    return q


def stem_prefix(word: str) -> str:
    return word if len(word) <= 4 else word[: max(4, len(word) - 3)]
