"""The Voyage provider against a local server speaking Voyage's embeddings protocol."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest
from fake_openai import FakeOpenAI

from indexer.config import Config, ProviderConfig, RemoteProviderConfig
from indexer.engine import AgentIndex
from indexer.selection import select_provider
from providers.errors import PermanentError, RateLimited, TransientError
from providers.retry import call_with_retries
from providers.voyage_provider import VoyageProvider


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    f = FakeOpenAI(dims=32).start()
    yield f
    f.stop()


def provider(fake: FakeOpenAI) -> VoyageProvider:
    return VoyageProvider("sk-test", model="voyage-3.5", dims=32, base_url=fake.base_url, timeout=5)


def test_input_types_dims_and_caps(fake: FakeOpenAI) -> None:
    p = provider(fake)
    v = p.embed_all([f"note {i}" for i in range(1500)])
    assert v.shape == (1500, 32) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert fake.embed_inputs == [1000, 500]
    p.embed_query("where is the gateway")
    assert fake.input_types == ["document", "document", "query"]


def test_errors_and_retry_after(fake: FakeOpenAI) -> None:
    p = provider(fake)
    fake.fail_next = [(429, {"Retry-After": "1"}, b'{"detail":"slow down"}')]
    t0 = time.monotonic()
    assert call_with_retries(lambda: p.embed_documents(["x"])).shape == (1, 32)
    assert 0.9 <= time.monotonic() - t0 < 3
    fake.fail_next = [(429, {}, b'{"detail":"slow down"}')]
    with pytest.raises(RateLimited):
        p.embed_documents(["x"])
    fake.fail_next = [(503, {}, b'{"detail":"busy"}')]
    with pytest.raises(TransientError):
        p.embed_documents(["x"])
    fake.fail_next = [(400, {}, b'{"detail":"bad"}')]
    with pytest.raises(PermanentError):
        p.embed_documents(["x"])


def test_selected_by_key_and_used_for_hybrid(
    cfg: Config, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "sk-test")
    c = replace(
        cfg,
        provider=ProviderConfig(
            name="auto",
            model="voyage-3.5",
            dims=32,
            remote=RemoteProviderConfig(baseUrl=fake.base_url),
        ),
    )
    sel = select_provider(c)
    assert sel.provider is not None and sel.provider.id == "voyage", sel.reason
    assert "openai: no openai API key" in sel.reason  # skipped, and said why
    with AgentIndex(c, provider=sel.provider) as idx:
        assert idx.sync().embedding["embedded"] == 4  # type: ignore[index]
        res = idx.search("rye bread")
        assert res["mode"] == "hybrid" and res["provider"] == "voyage"


def test_fallback_provider_takes_over(
    cfg: Config, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("VOYAGE_API_KEY", "sk-test")
    c = replace(
        cfg,
        provider=ProviderConfig(
            name="openai",
            fallback="voyage",
            dims=32,
            remote=RemoteProviderConfig(baseUrl=fake.base_url),
        ),
    )
    sel = select_provider(c)
    assert sel.provider is not None and sel.provider.id == "voyage"
    assert "no openai API key" in sel.reason and "fallback provider voyage" in sel.reason
    none = replace(c, provider=replace(c.provider, fallback="none"))
    assert select_provider(none).provider is None


def test_voyage_batch_job_for_a_multi_file_sync(cfg: Config, workspace, fake: FakeOpenAI) -> None:  # type: ignore[no-untyped-def]
    from conftest import write

    for i in range(12):
        write(workspace, f"memory/2026-07-{i:02d}.md", f"# day {i}\n- fact number {i}\n")
    c = replace(
        cfg,
        provider=ProviderConfig(
            name="voyage",
            model="voyage-3.5",
            dims=32,
            remote=RemoteProviderConfig(
                baseUrl=fake.base_url, apiKey="sk-test", batch=True, batchTimeoutMs=30_000
            ),
        ),
    )
    fake.batch_polls = 2
    with AgentIndex(c, provider=select_provider(c).provider) as idx:
        emb = idx.sync().embedding
        assert emb and emb["batchSubmitted"] == 1 and emb["batchCollected"] == 1
        assert emb["pending"] == 0 and emb["embedded"] == 0
    assert fake.count("POST", "/v1/batches") == 1 and fake.count("POST", "/v1/embeddings") == 0
    line = json.loads(next(iter(fake.files.values())).splitlines()[0])
    assert set(line) == {"custom_id", "body"} and set(line["body"]) == {"input"}
    assert "document" in fake.input_types  # request_params applied to every line
