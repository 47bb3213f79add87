"""The Gemini provider against a local server speaking batchEmbedContents."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest
from fake_openai import FakeOpenAI

from indexer.config import Config, ProviderConfig, RemoteProviderConfig
from indexer.engine import AgentIndex
from indexer.selection import select_provider
from providers.errors import MissingCredentials, PermanentError, RateLimited, TransientError
from providers.gemini_provider import GeminiProvider
from providers.retry import call_with_retries

pytestmark = pytest.mark.slow


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    f = FakeOpenAI(dims=48).start()
    yield f
    f.stop()


def provider(fake: FakeOpenAI, key: str = "sk-test") -> GeminiProvider:
    return GeminiProvider(
        key,
        model="gemini-embedding-001",
        dims=48,
        base_url=fake.base_url.removesuffix("/v1"),
        timeout=5,
    )


def test_task_types_dims_and_caps(fake: FakeOpenAI) -> None:
    p = provider(fake)
    v = p.embed_all([f"note {i}" for i in range(250)])
    assert v.shape == (250, 48) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert fake.embed_inputs == [100, 100, 50]
    p.embed_query("where is the gateway")
    assert set(fake.input_types[:250]) == {"RETRIEVAL_DOCUMENT"}
    assert fake.input_types[-1] == "RETRIEVAL_QUERY"
    assert any(
        path.startswith("/v1beta/models/gemini-embedding-001:batchEmbedContents")
        for _, path in fake.calls
    )


def test_errors_and_retry_after(fake: FakeOpenAI) -> None:
    p = provider(fake)
    err = b'{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}'
    fake.fail_next = [(429, {"Retry-After": "1"}, err)]
    t0 = time.monotonic()
    assert call_with_retries(lambda: p.embed_documents(["x"])).shape == (1, 48)
    assert 0.9 <= time.monotonic() - t0 < 3
    fake.fail_next = [(429, {}, err)]
    with pytest.raises(RateLimited):
        p.embed_documents(["x"])
    fake.fail_next = [(500, {}, b'{"error":{"code":500,"message":"x","status":"INTERNAL"}}')]
    with pytest.raises(TransientError):
        p.embed_documents(["x"])
    fake.fail_next = [(400, {}, b'{"error":{"code":400,"message":"x","status":"INVALID"}}')]
    with pytest.raises(PermanentError):
        p.embed_documents(["x"])
    with pytest.raises(MissingCredentials):
        provider(fake, key="wrong").embed_documents(["x"])


def test_selected_by_key_and_used_for_hybrid(
    cfg: Config, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "sk-test")
    c = replace(
        cfg,
        provider=ProviderConfig(
            name="auto",
            model="gemini-embedding-001",
            dims=48,
            remote=RemoteProviderConfig(baseUrl=fake.base_url.removesuffix("/v1")),
        ),
    )
    sel = select_provider(c)
    assert sel.provider is not None and sel.provider.id == "gemini", sel.reason
    with AgentIndex(c, provider=sel.provider) as idx:
        assert idx.sync().embedding["embedded"] == 4  # type: ignore[index]
        assert idx.search("rye bread")["mode"] == "hybrid"


def test_batch_job_for_a_multi_file_sync(cfg: Config, workspace, fake: FakeOpenAI) -> None:  # type: ignore[no-untyped-def]
    from conftest import write

    for i in range(12):
        write(workspace, f"memory/2026-07-{i:02d}.md", f"# day {i}\n- fact number {i}\n")
    c = replace(
        cfg,
        provider=ProviderConfig(
            name="gemini",
            model="gemini-embedding-001",
            dims=48,
            remote=RemoteProviderConfig(
                baseUrl=fake.base_url.removesuffix("/v1"),
                apiKey="sk-test",
                batch=True,
                batchTimeoutMs=30_000,
            ),
        ),
    )
    fake.batch_polls = 3
    with AgentIndex(c, provider=select_provider(c).provider) as idx:
        emb = idx.sync().embedding
        assert emb and emb["batchSubmitted"] == 1 and emb["batchCollected"] == 1
        assert emb["pending"] == 0 and emb["embedded"] == 0  # nothing embedded one by one
        assert sum(1 for m, p in fake.calls if ":asyncBatchEmbedContent" in p) == 1
        assert not any(":batchEmbedContents" in p for _, p in fake.calls)
        assert idx.search("fact number 7")["mode"] == "hybrid"


def test_failed_gemini_batch_falls_back_to_direct_calls(cfg: Config, fake: FakeOpenAI) -> None:
    fake.batch_outcome = "expired"
    c = replace(
        cfg,
        provider=ProviderConfig(
            name="gemini",
            model="gemini-embedding-001",
            dims=48,
            remote=RemoteProviderConfig(
                baseUrl=fake.base_url.removesuffix("/v1"), apiKey="sk-test", batch=True
            ),
        ),
    )
    with AgentIndex(c, provider=select_provider(c).provider) as idx:
        emb = idx.sync().embedding
        assert emb and emb["pending"] == 0 and emb["embedded"] == 4
        assert any(":batchEmbedContents" in p for _, p in fake.calls)
