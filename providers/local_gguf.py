"""Local GGUF embeddings through llama-cpp-python (the optional ``local`` extra).

The model is a file path or an ``hf:<owner>/<repo>/<file>.gguf`` URI, resolved into a
cache directory (downloaded once from ``$HF_ENDPOINT`` or huggingface.co, with a
timeout: a model that cannot be fetched is a clear error, never a hang).

Some models want their input marked: e5 reads ``query: …`` and ``passage: …``,
nomic ``search_query: …`` and ``search_document: …``. The prefixes come from the
configuration, else from the model file's ``memindex.query_prefix`` /
``memindex.document_prefix`` metadata (``scripts/build_e5_model.py`` writes them),
else none; they are part of the provider key.

Tuned for CPU throughput (bench/embed_bench.py): flash attention with n_ctx = n_batch
= n_ubatch (llama.cpp aborts on an n_ubatch below n_batch for embeddings), all cores,
many chunks per call. Vectors are L2-normalised here (llama.cpp does not unless
asked).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .base import EmbeddingProvider, Vectors
from .errors import MissingCredentials, PermanentError, ProviderTimeout, TransientError

__all__ = ["LocalGGUFProvider", "resolve_model"]

DEFAULT_HF_ENDPOINT = "https://huggingface.co"
QUERY_PREFIX_KEY = "memindex.query_prefix"  # GGUF metadata a model may carry
DOCUMENT_PREFIX_KEY = "memindex.document_prefix"


def resolve_model(spec: str, cache_dir: Path, *, timeout: float = 60.0) -> Path:
    """A local file for ``spec`` (a path, or hf:owner/repo/file.gguf into ``cache_dir``)."""
    if not spec.startswith("hf:"):
        path = Path(os.path.expanduser(spec))
        if not path.is_file():
            raise MissingCredentials(f"local model file {path} does not exist")
        return path
    parts = spec[3:].split("/")
    if len(parts) < 3 or not parts[-1].endswith(".gguf") or any(p in ("", "..") for p in parts):
        raise PermanentError(f"bad model URI {spec!r}: expected hf:<owner>/<repo>/<file>.gguf")
    owner, repo, file = parts[0], parts[1], "/".join(parts[2:])
    target = cache_dir / owner / repo / file
    if target.is_file():
        return target
    base = os.environ.get("HF_ENDPOINT", DEFAULT_HF_ENDPOINT).rstrip("/")
    url = f"{base}/{owner}/{repo}/resolve/main/{file}"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, tmp.open("wb") as out:
            while True:
                block = resp.read(1 << 20)
                if not block:
                    break
                out.write(block)
    except urllib.error.HTTPError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if exc.code in (401, 403, 404):
            raise MissingCredentials(f"cannot download {spec}: HTTP {exc.code}") from exc
        raise TransientError(f"cannot download {spec}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise ProviderTimeout(f"cannot download {spec} from {base}: {exc}") from exc
    tmp.replace(target)
    return target


class LocalGGUFProvider(EmbeddingProvider):
    id = "local"
    max_batch_items = 256
    max_batch_tokens = 1_000_000
    line_windows = True  # a sentence model: see providers/base.py

    def __init__(
        self,
        model_path: Path,
        *,
        threads: int | None = None,
        n_ctx: int = 512,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
    ) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise MissingCredentials(
                "llama-cpp-python is not installed: pip install 'memindex[local]'"
            ) from exc
        try:
            self._llm: Any = Llama(
                model_path=str(model_path),
                embedding=True,
                n_ctx=n_ctx,
                n_batch=n_ctx,
                n_ubatch=n_ctx,
                flash_attn=True,
                n_threads=threads or os.cpu_count() or 1,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise PermanentError(f"cannot load GGUF model {model_path}: {exc}") from exc
        dims = int(self._llm.n_embd())
        ident = f"gguf:{model_path.stat().st_size}:{_sample_hash(model_path)}"
        super().__init__(model=model_path.name, dims=dims, endpoint=ident)
        self.max_input_tokens = n_ctx
        meta = getattr(self._llm, "metadata", None) or {}
        self.query_prefix = (
            query_prefix if query_prefix is not None else str(meta.get(QUERY_PREFIX_KEY, ""))
        )
        self.document_prefix = (
            document_prefix
            if document_prefix is not None
            else str(meta.get(DOCUMENT_PREFIX_KEY, ""))
        )
        self._lock = threading.Lock()  # a llama.cpp context is not thread-safe

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed([self.document_prefix + t for t in texts])

    def embed_query(self, text: str) -> Vectors:
        return self._embed([self.query_prefix + text])

    def _embed(self, texts: list[str]) -> Vectors:
        try:
            with self._lock:
                out = self._llm.embed(texts, normalize=False, truncate=True)
        except (ValueError, RuntimeError) as exc:
            raise PermanentError(f"local embedding failed: {exc}") from exc
        return self._checked(out, len(texts))

    def key(self) -> str:
        if not (self.query_prefix or self.document_prefix):
            return super().key()  # unchanged for models without prefixes
        marked = f"{super().key()}|{self.query_prefix}|{self.document_prefix}"
        return hashlib.sha256(marked.encode()).hexdigest()[:24]

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        if self.query_prefix or self.document_prefix:
            out["prefixes"] = {"query": self.query_prefix, "document": self.document_prefix}
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._llm.close()


def _sample_hash(path: Path, block: int = 1 << 20, samples: int = 16) -> str:
    """The cache key's view of a model file: the first MiB (GGUF header and
    metadata), ``samples`` MiB spread over the tensors and the last MiB. A rebuilt or re-downloaded
    copy of the same model keeps its cache hits (the modification time is not part
    of it); a different model, even of the same size, gets a new key. Hashing whole
    multi-GB files would cost seconds at every start."""
    size = path.stat().st_size
    h = hashlib.sha256()
    with path.open("rb") as fh:
        h.update(fh.read(block))
        for i in range(1, samples + 1):
            fh.seek(max(0, size * i // (samples + 1) - block // 2))
            h.update(fh.read(block))
        fh.seek(max(0, size - block))
        h.update(fh.read(block))
    return h.hexdigest()[:20]
