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
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ParsedQuery:
    """A query taken apart once, with everything the search stages read from it."""

    required: tuple[tuple[str, ...], ...] = ()  # quoted phrases
    terms: tuple[str, ...] = ()  # OR-ed words (stop words removed)
    exact: tuple[str, ...] = ()  # literal tokens, lower-cased
    exact_parts: tuple[tuple[str, ...], ...] = ()
    cjk: tuple[str, ...] = ()  # bigrams (or single characters)
    empty: bool = True  # nothing to search for
    keyword: KeywordQuery = KeywordQuery((), ())  # required phrases AND-ed, the rest OR-ed
    needles: tuple[str, ...] = ()  # strings whose literal presence marks an exact hit
    words: tuple[str, ...] = ()  # the words a hit's text is matched against
    # per query word, the prefix a matching word must start with (a cheap stand-in
    # for the porter stemmer when marking matching lines)
    stems: tuple[str, ...] = ()
    filler: bool = True  # only stop words (or nothing) to search for


def _split_words(text: str) -> tuple[list[str], list[str]]:
    """(latin-ish words, CJK runs) of ``text``, lower-cased."""
    runs = cjk(run=True).findall(text)
    rest = cjk(run=True).sub(" ", text)
    return [w.lower() for w in _WORD.findall(rest)], runs


def parse_query(query: str) -> ParsedQuery:
    required: list[tuple[str, ...]] = []
    exact: list[str] = []
    exact_parts: list[tuple[str, ...]] = []
    words: list[str] = []
    cjk_runs: list[str] = []

    def take_phrase(m: re.Match[str]) -> str:
        ws, runs = _split_words(m.group(1))
        parts = ws + [c for run in runs for c in run]
        if parts:
            required.append(tuple(parts))
        return " "

    rest = _PHRASE.sub(take_phrase, query)
    for piece in rest.split():
        piece = piece.strip(_TRIM).rstrip(".")
        if not piece:
            continue
        if _EXACT_PIECE.match(piece) and not cjk().search(piece):
            exact.append(piece.lower())
            exact_parts.append(tuple(w.lower() for w in _WORD.findall(piece)))
            continue
        ws, runs = _split_words(piece)
        words.extend(ws)
        cjk_runs.extend(runs)
    kept = [w for w in words if w not in STOP_WORDS]
    # Stop words are searched only when the query is nothing else ("to be or not to
    # be"); beside an exact token, a phrase or CJK text they would outrank the anchor.
    anchored = bool(kept or exact or required or cjk_runs)
    terms = tuple(dict.fromkeys(kept if anchored else words))
    grams: dict[str, None] = {}
    for run in cjk_runs:
        for g in [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]:
            grams[g] = None
    match = terms + tuple(w for p in exact_parts for w in p)
    optional = [(t,) for t in terms] + exact_parts + [tuple(g) for g in grams]
    return ParsedQuery(
        required=tuple(required),
        terms=terms,
        exact=tuple(exact),
        exact_parts=tuple(exact_parts),
        cjk=tuple(grams),
        empty=not (required or terms or exact_parts or grams),
        keyword=KeywordQuery(tuple(required), tuple(optional)),
        needles=tuple(exact) + tuple(" ".join(p) for p in required if p),
        words=match,
        stems=tuple(dict.fromkeys(stem_prefix(w) for w in match)),
        filler=not anchored,
    )


def stem_prefix(word: str) -> str:
    return word if len(word) <= 4 else word[: max(4, len(word) - 3)]
