"""``[query.stages]``: one switch per ranking stage of the search pipeline
(``indexer/search/pipeline.py``), and the keys of earlier releases that are read as
switches (``split_stages``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from indexer.config.schema import setting
from indexer.errors import ConfigError

__all__ = ["MOVED", "StagesConfig", "split_stages"]


@dataclass(frozen=True)
class StagesConfig:
    """``[query.stages]``: one switch per ranking stage (``indexer/search/pipeline.py``);
    each default is what the ablation of docs/RETRIEVAL.md kept."""

    exactBoost: bool = setting(
        True, "a chunk holding an exact token or quoted phrase ranks as if its BM25 were 25% higher"
    )
    exactAnchor: bool = setting(
        False,
        "a short question around an exact token (OPS-2304): the chunks holding it rank first",
    )
    ties: bool = setting(
        False, "keyword hits of equal score: the one holding more of the query's words first"
    )
    queryWeight: bool = setting(
        True,
        "hybrid: the vector side weighs up to hybrid.vectorWeightWeak when no keyword hit holds "
        "the query's words (a paraphrase)",
    )
    subject: bool = setting(
        False,
        'a question asking for a value ("the plumber\'s name"): a hit holding only the words '
        "that ask for it (name, number, address) and none of what it is about ranks below those "
        "that hold one",
    )
    entrySignals: bool = setting(
        True,
        "a MEMORY.md/USER.md entry's importance (1-10) and project against the session's "
        "active ones scale its score, as OpenClaw's memory-core does",
    )
    rules: bool = setting(
        True,
        'a question asking the assistant to act for the user or how the user wants it ("can '
        'you book", "should you", "any ideas for"): USER.md entries and MEMORY.md lines '
        "stating a rule or preference score 1.5 times higher",
    )
    decay: bool = setting(
        False,
        "dated daily logs (memory/YYYY-MM-DD*.md) lose score with age (query.halfLifeDays); "
        "MEMORY.md, undated files, transcripts and exact hits never do",
    )
    dateBoost: bool = setting(
        True,
        'a time the query names ("last week", "in March", "yesterday"): what is dated in it '
        "ranks 1 + query.dateBoost times higher",
    )
    undatedMatch: bool = setting(
        False,
        "a time the query names: an undated memory note holding every word of the question "
        "(two or more) where no note of that time does is boosted as those are (the time "
        "may describe, 'the plumber who came in March')",
    )
    windowFill: bool = setting(
        True,
        "a topic within a named time of a month or less: what is dated in the time and holds "
        "a query word first, the rest of that time after the hits that hold the words",
    )
    firstMention: bool = setting(
        False, "an ID asked about on its own: the note that first mentions it first"
    )
    decision: bool = setting(
        True, "a question about a decision: the line that records one about its subject first"
    )
    rerank: bool = setting(True, "the reranker, when [rerank] names a provider")
    dedup: bool = setting(
        True,
        "one result per place: overlapping chunks matching in their shared lines, and the same "
        "memory in a daily log and a transcript, are one result",
    )
    supersession: bool = setting(
        True,
        "two notes stating one attribute of one subject with different values: the newer "
        "first, the older naming it",
    )
    balance: bool = setting(
        False,
        "both sources searched: transcripts never crowd memory files out (query.memoryShare)",
    )
    mmr: bool = setting(False, "re-order for diversity (query.mmrLambda; exact hits stay first)")


# Keys of earlier releases and where they went: query.X is read as query.stages.Y.
MOVED = {"temporalDecay": "decay", "mmr": "mmr"}


def split_stages(raw: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``[query]``'s keys, and its ``[query.stages]`` ones with the moved keys
    (``MOVED``) among them."""
    raw = dict(raw)
    stages = raw.pop("stages", {})
    if not isinstance(stages, dict):
        raise ConfigError(f"{where}: [query.stages] must be a table")
    stages = dict(stages)
    for old, new in MOVED.items():
        if old in raw:
            value = raw.pop(old)
            if new in stages and stages[new] != value:
                raise ConfigError(
                    f"{where}: 'query.{old}' (an earlier name) and 'query.stages.{new}' disagree"
                )
            stages[new] = value
    return raw, stages
