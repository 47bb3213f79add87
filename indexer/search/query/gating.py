"""Query gating for auto-recall callers (``memory_search`` with ``gate: true``).

A gateway that searches memory before every agent turn should not spend a search
(and put stale snippets into the prompt) on "thanks!", "ok", "/reset" or a lone
emoji. ``skip_reason`` names why a message is not worth searching, or returns None.
Anything that asks to remember is always searched, however short.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["skip_reason"]

_RECALL = re.compile(
    r"\b(?:remember|recall|remind|forgot|forget|last time|previously|earlier|"
    r"did (?:i|we|you)|have (?:i|we) (?:ever|already)|what was|when did|where did|"
    r"who (?:was|is)|do you know|you said|i (?:told|said|mentioned))\b",
    re.I,
)
_SMALL_TALK = frozenset(
    [
        "hi",
        "hello",
        "hey",
        "heya",
        "hiya",
        "yo",
        "howdy",
        "morning",
        "evening",
        "afternoon",
        "night",
        "gm",
        "gn",
        "good",
        "thanks",
        "thank",
        "thx",
        "ty",
        "tysm",
        "cheers",
        "appreciated",
        "great",
        "nice",
        "cool",
        "awesome",
        "perfect",
        "ok",
        "okay",
        "okey",
        "k",
        "kk",
        "sure",
        "yes",
        "yeah",
        "yep",
        "yup",
        "no",
        "nope",
        "nah",
        "fine",
        "alright",
        "right",
        "got",
        "it",
        "understood",
        "noted",
        "done",
        "lol",
        "lmao",
        "haha",
        "hehe",
        "wow",
        "oh",
        "ah",
        "hmm",
        "hm",
        "bye",
        "goodbye",
        "later",
        "cya",
        "you",
        "u",
        "very",
        "much",
        "so",
        "again",
        "all",
        "that",
        "too",
        "a",
        "the",
        "please",
        "pls",
        "welcome",
        "np",
        "sounds",
        "works",
    ]
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def skip_reason(query: str) -> str | None:
    """Why ``query`` is not worth a memory search ("empty", "command", "emoji",
    "small talk"), or None to search."""
    text = query.strip()
    if not text:
        return "empty"
    if _RECALL.search(text):
        return None
    if text.startswith("/") and re.fullmatch(r"/[\w-]+(?:\s.*)?", text, re.S):
        return "command"
    words = _WORD.findall(text.lower())
    if not words:
        if all(_is_symbol(c) for c in text if not c.isspace()):
            return "emoji"
        return None
    if len(words) <= 6 and all(w in _SMALL_TALK for w in words):
        return "small talk"
    return None


def _is_symbol(c: str) -> bool:
    cat = unicodedata.category(c)
    return cat[0] in "SP" or cat in ("Mn", "Me", "Cf") or c in "\u200d\ufe0f"
