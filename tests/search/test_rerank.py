"""The rerank stage: the wire formats (Voyage, Jina/Cohere, TEI) against a local
server, errors with 429/5xx, the stage reordering the whole fused pool, the blends,
timeout and failure fallbacks, the score cache, and a GGUF model with rank pooling
through llama-cpp-python."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import REPO, write
from daemon_util import wait_for
from fake_rerank import FakeRerank

from indexer.config import Config, RerankConfig
from indexer.config.file import parse_config
from indexer.engine import AgentIndex
from indexer.errors import ConfigError
from indexer.search.stages import rerank as stage
from providers.errors import MissingCredentials, PermanentError, RateLimited, TransientError
from providers.rerank import HttpReranker, make_reranker
from providers.retry import call_with_retries

pytestmark = pytest.mark.slow


@pytest.fixture
def fake() -> Iterator[FakeRerank]:
    f = FakeRerank().start()
    yield f
    f.stop()


@pytest.fixture(autouse=True)
def _fresh_stage() -> Iterator[None]:
    """Each test builds its own reranker and starts with an empty score cache."""
    stage.CACHE.clear()
    stage._BUILT.clear()
    yield
    stage.CACHE.clear()
    stage._BUILT.clear()


def test_the_three_response_shapes(fake: FakeRerank) -> None:
    docs = ["rye bread recipe", "the garden gate", "bread and rye and more"]
    voyage = HttpReranker("voyage", "", fake.base_url, "vk-test", 5)
    assert voyage.score("rye bread", docs) == [0.5, 0.0, 0.5]
    body = fake.requests[-1]
    assert body["model"] == "rerank-2.5" and body["truncation"] is True
    assert fake.headers[-1]["Authorization"] == "Bearer vk-test"
    jina = HttpReranker("http", "jina-reranker-v2", fake.base_url, "", 5)
    # Jina/Cohere answer best first and may leave documents out with top_n: memindex
    # asks for all of them and puts each score back at its document.
    assert jina.score("garden gate", docs) == [0.0, 0.5, 0.0]
    assert fake.requests[-1]["top_n"] == 3 and "Authorization" not in fake.headers[-1]
    fake.shape = "tei"
    assert jina.score("rye", docs) == [0.5, 0.0, 0.5]
    assert jina.score("rye", []) == []


def test_errors_are_classified(fake: FakeRerank) -> None:
    r = HttpReranker("http", "m", fake.base_url, "", 5)
    fake.fail_next = [(429, {"Retry-After": "7"}, b'{"error":"slow down"}')]
    with pytest.raises(RateLimited) as limited:
        r.score("q", ["d"])
    assert limited.value.retry_after == 7
    fake.fail_next = [(503, {}, b"busy")]
    with pytest.raises(TransientError):
        r.score("q", ["d"])
    fake.fail_next = [(401, {}, b"no")]
    with pytest.raises(MissingCredentials):
        r.score("q", ["d"])
    fake.fail_next = [(400, {}, b'{"error":"bad model"}')]
    with pytest.raises(PermanentError, match="bad model"):
        r.score("q", ["d"])
    fake.fail_next = [(429, {"Retry-After": "0"}, b"{}")]
    assert call_with_retries(lambda: r.score("q", ["q"])) == [0.5]  # retried once
    with pytest.raises(MissingCredentials):
        make_reranker("voyage", base_url=fake.base_url)  # no key anywhere


@pytest.mark.parametrize(
    "body, why",
    [
        (b"not json", "unreadable"),
        (b'{"results": [{"index": 5, "relevance_score": 0.1}]}', "out of range"),
        (b'{"results": [{"index": 0, "relevance_score": "high"}]}', "not a number"),
        (b'{"results": []}', "scored 0 of 1"),
        (b'{"something": 1}', "no 'data'"),
    ],
)
def test_unreadable_responses(fake: FakeRerank, body: bytes, why: str) -> None:
    fake.fail_next = [(200, {}, body)]
    with pytest.raises(PermanentError, match=why):
        HttpReranker("http", "m", fake.base_url, "", 5).score("q", ["d"])


def test_logits_become_probabilities(fake: FakeRerank) -> None:
    fake.fail_next = [
        (200, {}, b'[{"index": 0, "score": 3.0}, {"index": 1, "score": -3.0}]'),
    ]
    got = HttpReranker("http", "m", fake.base_url, "", 5).score("q", ["a", "b"])
    assert 0.95 < got[0] < 0.96 and 0.04 < got[1] < 0.05


@pytest.fixture
def garden(tmp_path: Path) -> Config:
    """Twenty daily logs about the garden gate; one weak keyword hit (a single
    'gate') holds what the reranker will favour."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- Nothing here about it.\n")
    for d in range(1, 21):
        body = "\n".join(
            f"- Garden gate note {i}: painted the garden gate, oiled the gate hinge."
            for i in range(3 + d % 4)
        )
        write(ws, f"memory/2026-10-{d:02d}.md", f"# 2026-10-{d:02d}\n\n{body}\n")
    write(ws, "memory/2026-10-25.md", "# 2026-10-25\n\n- The gate code is BLUEBIRD-7.\n")
    return Config(workspace=ws, indexPath=tmp_path / "i.sqlite")


def _paths(res: dict) -> list[str]:  # type: ignore[type-arg]
    return [r["path"] for r in res["results"]]


def test_the_whole_pool_is_reranked(garden: Config, fake: FakeRerank) -> None:
    favoured = "memory/2026-10-25.md"
    with AgentIndex(garden) as idx:
        idx.sync()
        plain = idx.search(mode="keyword", query="garden gate", min_score=0.0)
        assert favoured not in _paths(plain)  # too weak for the fused top 6
    fake.favour = "BLUEBIRD"
    on = RerankConfig(provider="http", baseUrl=fake.base_url, model="m")
    with AgentIndex(replace(garden, rerank=on)) as idx:
        res = idx.search(mode="keyword", query="garden gate", min_score=0.0, explain=True)
        assert res["fallback"] is None
        assert favoured in _paths(res)  # from below the cut into the results
        assert _paths(res)[0] != favoured  # the rank blend keeps the fused top 3 on top
        sent = fake.requests[-1]["documents"]
        assert len(sent) > 6  # the pool, not the final few
        parts = [r["explain"] for r in res["results"]]
        assert all("rerank" in p for p in parts)
        keys = [p["score"] for p in parts]
        assert keys == sorted(keys, reverse=True)
        assert res["explain"]["rerank"]["blend"] == "rank"
        assert res["explain"]["rerank"]["pool"] == len(sent)
    fixed = replace(on, blend="fixed", weight=0.9)
    with AgentIndex(replace(garden, rerank=fixed)) as idx:
        assert _paths(idx.search(mode="keyword", query="garden gate", min_score=0.0))[0] == favoured


def test_scores_are_cached_per_model_query_and_chunk(garden: Config, fake: FakeRerank) -> None:
    on = RerankConfig(provider="http", baseUrl=fake.base_url, model="m")
    with AgentIndex(replace(garden, rerank=on)) as idx:
        idx.sync()
        first = idx.search(mode="keyword", query="garden gate", explain=True)
        assert len(fake.requests) == 1 and first["explain"]["rerank"]["cached"] == 0
        again = idx.search(mode="keyword", query="garden gate", explain=True)
        assert len(fake.requests) == 1  # nothing sent
        assert again["explain"]["rerank"]["cached"] == again["explain"]["rerank"]["pool"]
        assert _paths(again) == _paths(first)
        idx.search(mode="keyword", query="painted hinge")
        assert len(fake.requests) == 2  # another query is another key
    other = replace(on, model="m2")
    with AgentIndex(replace(garden, rerank=other)) as idx:
        idx.search(mode="keyword", query="garden gate")
        assert len(fake.requests) == 3 and fake.requests[-1]["model"] == "m2"


def test_timeout_and_failures_fall_back_to_fused_order(garden: Config, fake: FakeRerank) -> None:
    with AgentIndex(garden) as idx:
        idx.sync()
        fused = _paths(idx.search(mode="keyword", query="garden gate", min_score=0.0))
    fake.favour = "BLUEBIRD"
    on = RerankConfig(provider="http", baseUrl=fake.base_url, model="m", timeoutMs=300)
    with AgentIndex(replace(garden, rerank=on)) as idx:
        fake.delay = 2.0
        t0 = time.monotonic()
        res = idx.search(mode="keyword", query="garden gate", min_score=0.0)
        assert time.monotonic() - t0 < 1.5
        assert "longer than 0.3s: fused order" in res["fallback"]
        assert _paths(res) == fused
        fake.delay = 0.0
        assert len(stage.CACHE) == 0
        wait_for(lambda: len(stage.CACHE) > 0, timeout=10)  # the late answer lands in it
        fake.fail_next = [(500, {}, b"x"), (500, {}, b"x")]
        res = idx.search(
            mode="keyword", query="gate hinge", min_score=0.0
        )  # not cached: asks, fails twice
        assert "rerank failed (rerank HTTP 500): fused order" in res["fallback"]
        assert res["results"]
        late = idx.search(mode="keyword", query="garden gate", min_score=0.0)
        assert late["fallback"] is None and "memory/2026-10-25.md" in _paths(late)
    gone = RerankConfig(provider="http", baseUrl="http://127.0.0.1:9/v1", model="m")
    with AgentIndex(replace(garden, rerank=gone)) as idx:
        res = idx.search(mode="keyword", query="garden gate")
        assert "rerank failed" in res["fallback"] and res["results"]
    keyless = RerankConfig(provider="voyage", baseUrl=fake.base_url)
    with AgentIndex(replace(garden, rerank=keyless)) as idx:
        res = idx.search(mode="keyword", query="garden gate")
        assert "reranker unavailable (no Voyage API key" in res["fallback"] and res["results"]


def test_config_validation(tmp_path: Path) -> None:
    ok, _ = parse_config(
        {"rerank": {"provider": "http", "baseUrl": "http://127.0.0.1:8080/v1", "blend": "fixed"}}
    )
    assert ok.rerank.provider == "http" and ok.rerank.blend == "fixed"
    assert ok.query.abstainBelow == 0.1
    for data, why in (
        ({"provider": "cohere-magic"}, "rerank.provider"),
        ({"provider": "http"}, "needs rerank.baseUrl"),
        ({"provider": "local"}, "needs rerank.model"),
        ({"blend": "mean"}, "rerank.blend"),
        ({"weight": 1.5}, "rerank.weight"),
        ({"candidates": 0}, "rerank.candidates"),
        ({"timeoutMs": "fast"}, "rerank.timeoutMs"),
    ):
        with pytest.raises(ConfigError, match=why):
            parse_config({"rerank": data})


def test_local_gguf_reranker_with_rank_pooling(garden: Config) -> None:
    """llama-cpp-python with rank pooling, on a GGUF with a classification head.

    No cross-encoder's weights ship in a registry package, so the model is the test
    MiniLM with a fixed random head (scripts/build_test_model.py --rerank): its
    scores mean nothing, and this checks the wiring only."""
    pytest.importorskip("llama_cpp")
    sys.path.insert(0, str(REPO / "scripts"))
    from build_test_model import build

    model = build(rerank=True)
    r = make_reranker("local", model=str(model))
    docs = ["the gateway runs on port 8080", "I baked rye bread", "x " * 3000]
    first = r.score("where is the gateway", docs)
    assert first == r.score("where is the gateway", docs)  # deterministic
    assert all(0.0 < s < 1.0 for s in first) and len(set(first)) == 3
    on = RerankConfig(provider="local", model=str(model), timeoutMs=60_000, candidates=10)
    with AgentIndex(replace(garden, rerank=on)) as idx:
        idx.sync()
        res = idx.search(mode="keyword", query="garden gate", explain=True)
        assert res["fallback"] is None
        parts = [p["explain"] for p in res["results"]]
        assert all(0.0 < p["rerank"] < 1.0 for p in parts)
        keys = [p["score"] for p in parts]
        assert keys == sorted(keys, reverse=True)
    with pytest.raises(PermanentError, match="rank pooling"):
        make_reranker("local", model=str(build()))  # an embedding model is refused
    json.dumps(first)
