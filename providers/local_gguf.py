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

The model runs once per text and hands back every token's vector (llama.cpp's
pooling "none"); the text's vector is pooled here as the model says (mean, first
token or last). A chunk's line windows (providers/base.py) cost no extra pass: as
shipped (``window_pooling = "segments"``) the chunk is read as runs of three lines,
each a sequence of its own in the same model run, so every token is read once.
"passes" embeds the overlapping windows as texts of their own, about 1.5 more
passes per chunk (what memindex did before). bench/embed_bench.py and
bench/eval.py compare them (docs/lab/retrieval-log.md, "Line windows in one pass").
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .base import WINDOW_LINES, EmbeddingProvider, Vectors, normalize
from .errors import (
    MissingCredentials,
    PermanentError,
    ProviderTimeout,
    TransientError,
    install_hint,
    package_fix,
)

__all__ = ["WINDOW_MODES", "LocalGGUFProvider", "resolve_model"]

# How line windows are mixed into a chunk's vector (``embed_all``): the shipped one,
# then the windows as texts of their own (docs/lab/retrieval-log.md, "Line windows in one pass").
WINDOW_MODES = ("segments", "passes")

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
    window_pooling = "segments"  # one of WINDOW_MODES (see embed_all)

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
            import llama_cpp
            from llama_cpp import Llama
        except ImportError as exc:
            raise MissingCredentials(
                "llama-cpp-python is not installed: " + install_hint("local"),
                fix=package_fix("local"),
            ) from exc
        try:
            with _quiet_llama():  # it warns that "none" is not the model's own pooling
                self._llm: Any = Llama(
                    model_path=str(model_path),
                    embedding=True,
                    n_ctx=n_ctx,
                    n_batch=n_ctx,
                    n_ubatch=n_ctx,
                    flash_attn=True,
                    n_threads=threads or os.cpu_count() or 1,
                    pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE,  # token vectors, pooled here
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
        self._closed = False
        arch = str(meta.get("general.architecture", ""))
        # how the model pools its token vectors: 1 mean, 2 the first token, 3 the last
        self.pooling = int(meta.get(f"{arch}.pooling_type", 1) or 1)
        if self.pooling not in (1, 2, 3):
            self.close()
            raise PermanentError(f"{model_path}: pooling type {self.pooling} is not an embedding")
        try:  # a model whose weights give NaN must fail here, not after it stored vectors
            self.embed_documents(["memindex checks that this model embeds text"])
        except PermanentError as exc:
            self.close()
            raise PermanentError(f"{model_path} failed its first embedding: {exc.message}") from exc

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed([self.document_prefix + t for t in texts])

    def embed_query(self, text: str) -> Vectors:
        return self._embed([self.query_prefix + text])

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed([self.query_prefix + t for t in texts])

    def _embed(self, texts: list[str]) -> Vectors:
        return self._checked([self._pool(t) for t in self._token_vectors(texts)], len(texts))

    def _pool(self, tokens: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        out: npt.NDArray[np.float32]
        if self.pooling == 2:
            out = tokens[0]
        elif self.pooling == 3:
            out = tokens[-1]
        else:
            out = tokens.mean(axis=0)
        return out

    def _token_vectors(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        """Every token's vector of each text (truncated to the context), from as few
        model runs as fit: texts are packed into one batch up to ``n_batch`` tokens."""
        import llama_cpp

        llm = self._llm
        out: list[npt.NDArray[np.float32]] = []
        group: list[list[int]] = []

        def run() -> None:
            ctx, batch = llm._ctx, llm._batch
            ctx.kv_cache_clear()
            batch.reset()
            for seq, tk in enumerate(group):
                batch.add_sequence(tk, seq, True)
            ctx.decode(batch)
            batch.reset()
            total = sum(len(tk) for tk in group)
            ptr = llama_cpp.llama_get_embeddings(ctx.ctx)
            rows = np.ctypeslib.as_array(ptr, shape=(total, self.dims)).astype(np.float32)
            at = 0
            for tk in group:
                out.append(rows[at : at + len(tk)])
                at += len(tk)
            group.clear()

        try:
            with self._lock:  # tokenizing too: a closed model must not be touched
                if self._closed:
                    raise PermanentError("the local model was closed")
                limit = int(llm.n_batch)
                seqs = int(llm.context_params.n_seq_max)
                tokens = [list(llm.tokenize(t.encode("utf-8")))[:limit] for t in texts]
                used = 0
                for tk in tokens:
                    if group and (used + len(tk) > limit or len(group) >= seqs):
                        run()
                        used = 0
                    group.append(tk)
                    used += len(tk)
                if group:
                    run()
        except (ValueError, RuntimeError) as exc:
            raise PermanentError(f"local embedding failed: {exc}") from exc
        return out

    def embed_all(self, texts: Sequence[str]) -> Vectors:
        """Documents, each mixed with its line windows (providers/base.py). With a
        mean-pooling model and ``window_pooling = "segments"``: each chunk read as
        runs of ``WINDOW_LINES`` non-empty lines, every run a sequence of its own in
        the same model run (each token read once); the chunk's vector is the mean of
        all its tokens mixed with the mean of the runs' vectors. Else as passes."""
        if not (self.line_windows and self.window_pooling == "segments" and self.pooling == 1):
            return super().embed_all(texts)
        out = []
        for start in range(0, len(texts), self.max_batch_items):
            part = texts[start : start + self.max_batch_items]
            seqs: list[str] = []
            owners: list[int] = []
            for n, text in enumerate(part):
                lines = [line for line in text.split("\n") if line.strip()]
                runs = (
                    [
                        "\n".join(lines[i : i + WINDOW_LINES])
                        for i in range(0, len(lines), WINDOW_LINES)
                    ]
                    if len(lines) > WINDOW_LINES
                    else [text]
                )
                seqs.extend(self.document_prefix + r for r in runs)
                owners.extend([n] * len(runs))
            vecs = self._token_vectors(seqs)
            at = 0
            for n in range(len(part)):
                mine = []
                while at < len(owners) and owners[at] == n:
                    mine.append(vecs[at])
                    at += 1
                own = normalize(np.concatenate(mine).mean(axis=0))[0]
                if len(mine) > 1:
                    runs_mean = normalize(np.asarray([v.mean(axis=0) for v in mine])).mean(axis=0)
                    own = own + normalize(runs_mean)[0]
                out.append(own)
        if not out:
            return np.zeros((0, self.dims), dtype=np.float32)
        return normalize(np.asarray(out))

    def window_key(self) -> str:
        if self.pooling != 1 or self.window_pooling == "passes":
            return ""
        return "/" + self.window_pooling

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
        """Waits for a model run in progress; a call after it raises PermanentError
        (llama.cpp would crash the process on a freed context)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(Exception):
                self._llm.close()


@contextlib.contextmanager
def _quiet_llama() -> Iterator[None]:
    """What llama.cpp prints on stderr while a context is made (that the pooling asked
    for is not the model's own) held back: it writes there directly, past Python's
    logging. Failures still come back as exceptions."""
    import sys

    try:
        fd = sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):  # no real stderr: nothing to hide
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


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
