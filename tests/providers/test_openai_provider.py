"""The OpenAI provider against a local server speaking OpenAI's wire protocol."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import Runner, cli_json, write
from daemon_util import wait_for
from fake_openai import FakeOpenAI

from indexer.config import Config, ProviderConfig, RemoteProviderConfig
from indexer.engine import AgentIndex
from indexer.errors import InvalidParams
from indexer.selection import select_provider
from providers.calibration import META_KEY, Scale
from providers.errors import PermanentError, ProviderTimeout, RateLimited, TransientError
from providers.openai_provider import OpenAIProvider
from providers.retry import RetryPolicy, call_with_retries

pytestmark = pytest.mark.slow


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    f = FakeOpenAI(dims=64).start()
    yield f
    f.stop()


def provider(fake: FakeOpenAI, timeout: float = 10.0) -> OpenAIProvider:
    return OpenAIProvider(
        "sk-test", model="text-embedding-3-small", dims=64, base_url=fake.base_url, timeout=timeout
    )


def openai_cfg(cfg: Config, fake: FakeOpenAI, batch: bool = False) -> Config:
    return replace(
        cfg,
        provider=ProviderConfig(
            name="openai",
            model="text-embedding-3-small",
            dims=64,
            remote=RemoteProviderConfig(
                baseUrl=fake.base_url, apiKey="sk-test", batch=batch, batchTimeoutMs=30_000
            ),
        ),
    )


def test_embeddings_caps_and_normalisation(fake: FakeOpenAI) -> None:
    p = provider(fake)
    v = p.embed_all([f"text number {i}" for i in range(3000)])
    assert v.shape == (3000, 64) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert fake.embed_inputs == [2048, 952]  # the per-request item cap
    q = p.embed_query("text number 7")
    assert q.shape == (1, 64) and float(q[0] @ v[7]) > 0.99


def test_429_retry_after_is_honoured(fake: FakeOpenAI) -> None:
    p = provider(fake)
    fake.fail_next = [(429, {"Retry-After": "2"}, b'{"error":{"message":"slow down"}}')]
    t0 = time.monotonic()
    v = call_with_retries(lambda: p.embed_documents(["hello world"]))
    waited = time.monotonic() - t0
    assert v.shape == (1, 64) and 1.9 <= waited < 4.0
    assert fake.count("POST", "/v1/embeddings") == 2


def test_errors_are_classified(fake: FakeOpenAI) -> None:
    p = provider(fake, timeout=1.0)
    fake.fail_next = [(500, {}, b'{"error":{"message":"boom"}}')]
    with pytest.raises(TransientError):
        p.embed_documents(["x"])
    fake.fail_next = [(500, {}, b"{}"), (503, {}, b"{}")]
    assert call_with_retries(
        lambda: p.embed_documents(["x"]), RetryPolicy(attempts=3, initial=0.01)
    ).shape == (1, 64)
    fake.fail_next = [(429, {}, b"{}")]
    with pytest.raises(RateLimited):
        p.embed_documents(["x"])
    fake.fail_next = [(400, {}, b'{"error":{"message":"bad input"}}')]
    with pytest.raises(PermanentError):
        p.embed_documents(["x"])
    fake.fail_next = [(200, {}, b"this is not json")]
    with pytest.raises(PermanentError):
        p.embed_documents(["x"])
    fake.fail_next = [
        (
            200,
            {},
            json.dumps(
                {
                    "object": "list",
                    "model": "m",
                    "data": [{"object": "embedding", "index": 0, "embedding": [0.1] * 12}],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                }
            ).encode(),
        )
    ]
    with pytest.raises(PermanentError, match="dims"):
        p.embed_documents(["x"])  # wrong dimensions
    fake.delay = 3.0
    with pytest.raises(ProviderTimeout):
        p.embed_documents(["x"])


def test_failures_store_no_partial_vectors_and_keyword_keeps_answering(
    cfg: Config, fake: FakeOpenAI
) -> None:
    c = openai_cfg(cfg, fake)
    sel = select_provider(c)
    assert sel.provider is not None and sel.provider.id == "openai"
    fake.fail_next = [(200, {}, b"garbage")]
    with AgentIndex(c, provider=sel.provider) as idx:
        rep = idx.sync()
        assert rep.embedding and rep.embedding["error"] and rep.embedding["pending"] == 4
        assert idx.store.db.execute("SELECT count(*) FROM chunks_vec").fetchone()[0] == 0
        res = idx.search("rye bread")
        assert res["mode"] == "keyword" and res["results"][0]["path"] == "MEMORY.md"
        rep = idx.sync()  # the provider recovered: the pending chunks get vectors
        assert rep.embedding and rep.embedding["embedded"] == 4 and rep.embedding["pending"] == 0
        assert idx.search("rye bread")["mode"] == "hybrid"
    fake.stop()  # the provider dies: keyword search still answers, and says why
    with AgentIndex(c, provider=sel.provider) as idx:
        t0 = time.monotonic()
        res = idx.search("rye bread")
        assert res["mode"] == "keyword" and "failed" in res["fallback"]
        assert res["results"][0]["path"] == "MEMORY.md"
        assert time.monotonic() - t0 < 10


def test_one_batch_job_for_a_multi_file_sync(
    cfg: Config, workspace: Path, fake: FakeOpenAI
) -> None:
    for i in range(12):
        write(workspace, f"memory/2026-07-{i:02d}.md", f"# day {i}\n- fact number {i}\n")
    c = openai_cfg(cfg, fake, batch=True)
    fake.batch_polls = 3
    sel = select_provider(c)
    with AgentIndex(c, provider=sel.provider) as idx:
        rep = idx.sync()
        emb = rep.embedding
        assert emb and emb["batchSubmitted"] == 1 and emb["batchCollected"] == 1
        assert emb["pending"] == 0 and emb["batchJobs"] == 0
        assert fake.count("POST", "/v1/batches") == 1
        assert fake.count("POST", "/v1/embeddings") == 0  # nothing embedded one by one
        assert idx.search("fact number 7")["mode"] == "hybrid"
        # The model's similarity scale: two direct requests, once (the questions as
        # queries, the notes as documents), kept in the index.
        assert fake.calibrations == ["/v1/embeddings", "/v1/embeddings"]
        scale = Scale.from_meta(idx.store.meta_get(META_KEY), sel.provider.key())
        assert scale is not None and not scale.usable  # the fake's vectors are noise
        write(workspace, "memory/2026-07-99.md", "# day 99\n- fact number 99\n")
        idx.sync()
        assert len(fake.calibrations) == 2


def test_failed_batch_falls_back_to_direct_calls(cfg: Config, fake: FakeOpenAI) -> None:
    fake.batch_outcome = "expired"
    c = openai_cfg(cfg, fake, batch=True)
    with AgentIndex(c, provider=select_provider(c).provider) as idx:
        emb = idx.sync().embedding
        assert emb and emb["pending"] == 0 and emb["embedded"] == 4
        assert fake.count("POST", "/v1/batches") == 1 and fake.count("POST", "/v1/embeddings") == 1


def test_restart_mid_poll_collects_the_same_job(
    cli: Runner, workspace: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    fake.batch_polls = 10**9  # never finishes while the first process polls
    conf = write(
        tmp_path,
        "c.toml",
        "\n".join(
            [
                f'workspace = "{workspace}"',
                f'indexPath = "{tmp_path / "i.sqlite"}"',
                "[provider]",
                'name = "openai"',
                "dims = 64",
                "[provider.remote]",
                f'baseUrl = "{fake.base_url}"',
                'apiKey = "sk-test"',
                "batch = true",
                "",
            ]
        ),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexer.surfaces.cli", "--config", str(conf), "index"],
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: fake.count("GET", "/v1/batches/") >= 1, timeout=60)
        proc.send_signal(signal.SIGKILL)  # killed while polling
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert fake.count("POST", "/v1/batches") == 1
    fake.batch_polls = 0  # the job finishes
    out = cli_json(cli, "--config", str(conf), "index", "--json")
    assert fake.count("POST", "/v1/batches") == 1  # not paid twice
    assert out["embedding"]["batchCollected"] == 1 and out["embedding"]["pending"] == 0
    st = cli_json(cli, "--config", str(conf), "status", "--json")
    assert st["pendingBatches"] == [] and st["mode"] == "hybrid"


def test_slow_query_embedding_falls_back_to_keywords(cfg: Config, fake: FakeOpenAI) -> None:
    c = openai_cfg(cfg, fake)
    c = replace(
        c, provider=replace(c.provider, remote=replace(c.provider.remote, queryTimeoutMs=500))
    )
    sel = select_provider(c)
    with AgentIndex(c, provider=sel.provider) as idx:
        idx.sync()
        fake.delay = 3.0  # the provider hangs on queries
        t0 = time.monotonic()
        res = idx.search("rye bread")
        assert time.monotonic() - t0 < 2.0
        assert res["mode"] == "keyword" and "longer than 0.5s" in res["fallback"]
        assert res["results"][0]["path"] == "MEMORY.md"


def test_search_mode_is_a_request_parameter(cfg: Config, fake: FakeOpenAI) -> None:
    """keyword / vector / hybrid on one open index, no engine per mode: a query
    sharing no word with the notes finds nothing by keywords and its nearest chunks
    by vectors."""
    c = openai_cfg(cfg, fake)
    with AgentIndex(c, provider=select_provider(c).provider) as idx:
        idx.sync()
        default = idx.search("rye bread")
        assert default["mode"] == "hybrid" and default["fallback"] is None
        kw = idx.search("rye bread", mode="keyword")
        assert kw["mode"] == "keyword" and kw["fallback"] is None  # asked for: no excuse
        assert kw["results"] and all("vectorScore" not in r for r in kw["results"])
        assert idx.search("qqzx vvwy", mode="keyword")["results"] == []
        vec = idx.search("qqzx vvwy", mode="vector", min_score=0.0)
        assert vec["mode"] == "vector" and vec["results"]
        sims = [r["vectorScore"] for r in vec["results"]]
        assert sims == sorted(sims, reverse=True)  # ranked by cosine alone
        assert all(r["textScore"] == 0 for r in vec["results"])
        with pytest.raises(InvalidParams, match="'mode' must be one of"):
            idx.search("rye", mode="semantic")
    fake.stop()  # vector mode without a provider answers from keywords and says why
    with AgentIndex(c, provider=select_provider(c).provider) as idx:
        res = idx.search("rye bread", mode="vector")
        assert res["mode"] == "keyword" and "failed" in res["fallback"] and res["results"]


def test_retry_after_in_seconds_or_as_a_date() -> None:
    from email.utils import formatdate

    from providers.errors import retry_after_seconds

    assert retry_after_seconds({"retry-after": "5"}) == 5.0
    assert retry_after_seconds({"Retry-After": "1.5"}) == 1.5
    assert retry_after_seconds({"retry-after": "-3"}) == 0.0
    later = retry_after_seconds({"retry-after": formatdate(time.time() + 60, usegmt=True)})
    assert later is not None and 55 <= later <= 61
    for bad in (None, {}, {"retry-after": "soon"}, {"retry-after": ""}, object()):
        assert retry_after_seconds(bad) is None, bad
