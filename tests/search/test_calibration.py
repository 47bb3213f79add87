"""A score means the same whatever the model (providers/calibration.py): a model's
similarity scale is measured with the model, stored in the index by the writer, and
every search maps its cosines onto the reference model's scale before ``minScore``
judges them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import write

from indexer.config import Config
from indexer.engine import AgentIndex
from providers.base import EmbeddingProvider, Vectors, normalize
from providers.calibration import META_KEY, REFERENCE, Scale, calibrate, measure
from providers.local_gguf import LocalGGUFProvider


class Squeezed(EmbeddingProvider):
    """The local MiniLM model with every cosine squeezed into 0.8 .. 1.0 (as
    multilingual-e5-small's are, about 0.76 .. 0.9): each vector gets a shared
    direction, so ``cos' = 0.8 + 0.2 cos`` for any two texts."""

    id = "squeezed"

    def __init__(self, inner: LocalGGUFProvider) -> None:
        super().__init__("squeezed-minilm", inner.dims + 1)
        self.inner = inner

    def _squeeze(self, m: Vectors) -> Vectors:
        shared = np.full((m.shape[0], 1), np.sqrt(0.8), dtype=np.float32)
        return normalize(np.hstack([np.sqrt(0.2) * m, shared]))

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._squeeze(self.inner.embed_documents(texts))

    def embed_all(self, texts: Sequence[str]) -> Vectors:
        return self._squeeze(self.inner.embed_all(texts))

    def embed_query(self, text: str) -> Vectors:
        return self._squeeze(self.inner.embed_query(text))

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._squeeze(self.inner.embed_queries(texts))


@pytest.fixture(scope="module")
def minilm(model_path: Path) -> LocalGGUFProvider:
    p = LocalGGUFProvider(model_path)
    yield p
    p.close()


def test_the_reference_is_the_default_local_models_own_scale(minilm: LocalGGUFProvider) -> None:
    got = measure(minilm)
    assert abs(got.related - REFERENCE.related) < 0.002
    assert abs(got.unrelated - REFERENCE.unrelated) < 0.002
    assert got.usable
    for c in (0.0, 0.2, 0.35, 0.5, 0.9):
        assert abs(calibrate(c, got) - c) < 0.01  # the identity for the reference model


def test_the_map_and_when_it_is_not_used() -> None:
    e5_like = Scale(related=0.853, unrelated=0.763, spread=0.0216)  # measured for e5-small
    assert e5_like.usable
    assert abs(calibrate(0.763, e5_like) - REFERENCE.unrelated) < 1e-9
    assert abs(calibrate(0.853, e5_like) - REFERENCE.related) < 1e-9
    assert calibrate(0.5, e5_like) == 0.0 and calibrate(0.99, e5_like) == 1.0  # clamped
    noise = Scale(related=0.03, unrelated=0.0, spread=0.12)  # a model that embeds at random
    assert not noise.usable and calibrate(0.42, noise) == 0.42 and calibrate(0.42, None) == 0.42
    assert Scale.from_meta(e5_like.to_meta("k1"), "k1") == e5_like
    assert Scale.from_meta(e5_like.to_meta("k1"), "k2") is None  # another model's
    assert Scale.from_meta("{not json", "k1") is None and Scale.from_meta(None, "k1") is None


def test_a_squeezed_model_scores_as_the_reference_does(
    minilm: LocalGGUFProvider, workspace: Path, tmp_path: Path
) -> None:
    """The same memory searched with MiniLM and with MiniLM's cosines squeezed into
    0.8 .. 1.0: the squeezed cosines all pass ``minScore`` 0.35, the scores shown do
    not — they are MiniLM's, so the same results are kept and ranked alike."""
    write(workspace, "memory/2026-11-03.md", "# 2026-11-03\n\n- Booked the dentist for Friday.\n")
    queries = ("a bakery loaf with caraway", "xylophone quantum giraffe", "tooth doctor visit")
    got: dict[str, list[list[tuple[str, float]]]] = {}
    for name, provider in (("minilm", minilm), ("squeezed", Squeezed(minilm))):
        cfg = Config(workspace=workspace, indexPath=tmp_path / f"{name}.sqlite")
        with AgentIndex(cfg, provider=provider) as idx:
            idx.sync()
            stored = Scale.from_meta(idx.store.meta_get(META_KEY), provider.key())
            assert stored is not None and stored.usable, name
            got[name] = []
            for q in queries:
                res = idx.search(q, explain=True)
                assert res["mode"] == "hybrid"
                got[name].append([(r["citation"], r["score"]) for r in res["results"]])
                if name == "squeezed" and res["results"]:
                    parts = res["results"][0]["explain"]
                    assert parts["cosine"] >= 0.8 and "cosineCalibrated" in parts
    for mine, theirs in zip(got["squeezed"], got["minilm"], strict=True):
        assert [c for c, _ in mine] == [c for c, _ in theirs]
        assert all(abs(a - b) < 0.01 for (_, a), (_, b) in zip(mine, theirs, strict=True))
    assert got["minilm"][1] == []  # nothing about xylophones, with either model


def test_a_paraphrase_leans_on_the_vectors(
    minilm: LocalGGUFProvider, workspace: Path, tmp_path: Path
) -> None:
    """A question worded unlike the note that answers it: the keyword side ranks
    chance matches of its words, so the vector side weighs more for it
    (hybrid.vectorWeightWeak); a question whose words a note holds keeps the base
    weight."""
    from indexer.config import HybridConfig

    notes = {
        "2026-10-10": "- Replaced the kitchen faucet cartridge; the drip under the sink is gone.",
        "2026-10-11": "- The gutter above the porch is leaky.",
        "2026-10-13": "- Paid the electricity bill and renewed the parking permit.",
        "2026-10-14": "- Bought tomatoes, rye bread and coffee beans at the market.",
    }
    for day, note in notes.items():
        write(workspace, f"memory/{day}.md", f"# {day}\n\n{note}\n")
    order = {}
    for weak in (0.3, 0.7):
        cfg = Config(
            workspace=workspace,
            indexPath=tmp_path / f"w{weak}.sqlite",
            hybrid=HybridConfig(vectorWeightWeak=weak),
        )
        with AgentIndex(cfg, provider=minilm) as idx:
            idx.sync()
            res = idx.search("Did I get the leaky tap fixed?", explain=True)
            order[weak] = [r["path"][7:17] for r in res["results"][:3]]
            ex = res["explain"]
            plain = idx.search("the gutter above the porch is leaky", explain=True)["explain"]
            if weak == 0.7:
                assert ex["queryWordsHeld"] < 0.5  # one word of the question per note at best
                assert ex["vectorWeight"] > 0.5
                assert plain["queryWordsHeld"] == 1.0 and plain["vectorWeight"] == 0.3
            else:  # not above the base weight: one fixed weight, nothing worked out
                assert ex["vectorWeight"] == plain["vectorWeight"] == 0.3
                assert "queryWordsHeld" not in ex and "queryWordsHeld" not in plain
    # The faucet note, third behind two notes that share a word with the question at
    # one fixed weight, passes the garden gate (the workspace's 2026-11-01: "fixed").
    assert order[0.3] == ["2026-10-11", "2026-11-01", "2026-10-10"]
    assert order[0.7] == ["2026-10-11", "2026-10-10", "2026-11-01"]
    assert HybridConfig().vectorWeightWeak == 0.5


class FailsFirst(Squeezed):
    """Squeezed, whose first attempts to embed the calibration questions fail (a
    remote provider that just rate-limited): the scale comes one pass later."""

    def __init__(self, inner: LocalGGUFProvider) -> None:
        super().__init__(inner)
        self.model = "squeezed-fails-first"
        self.failures = 2  # the writer's retries of one pass

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        from providers.errors import TransientError

        if self.failures:
            self.failures -= 1
            raise TransientError("429: slow down")
        return super().embed_queries(texts)


def test_a_scale_stored_after_the_vectors_is_used_by_a_running_searcher(
    minilm: LocalGGUFProvider, workspace: Path, tmp_path: Path
) -> None:
    provider = FailsFirst(minilm)
    cfg = Config(workspace=workspace, indexPath=tmp_path / "i.sqlite")
    with AgentIndex(cfg, provider=provider) as idx:
        idx.sync()  # vectors written, the scale not measured
        assert idx.store.meta_get(META_KEY) is None
        raw = idx.search("rye bread", explain=True)["results"][0]
        assert "cosineCalibrated" not in raw["explain"] and raw["score"] > 0.8
        idx.sync()  # nothing new to embed; the scale is measured now
        assert idx.store.meta_get(META_KEY) is not None
        shown = idx.search("rye bread", explain=True)["results"][0]
        assert "cosineCalibrated" in shown["explain"] and shown["score"] < raw["score"]


def test_hybrid_ties_rank_by_file_and_line(
    minilm: LocalGGUFProvider, workspace: Path, tmp_path: Path
) -> None:
    """Two notes with the same text tie on both sides of a hybrid search: by file
    and line, however they were indexed (b first, then a removed and written again:
    a's chunk has the newer id)."""
    for name in ("b", "a"):
        write(workspace, f"memory/{name}.md", "- The porch light needs a new bulb.\n")
    cfg = Config(workspace=workspace, indexPath=tmp_path / "i.sqlite")
    with AgentIndex(cfg, provider=minilm) as idx:
        idx.sync()
        first = [r["path"] for r in idx.search("porch light bulb")["results"][:2]]
        (workspace / "memory/a.md").unlink()
        idx.sync()
        write(workspace, "memory/a.md", "- The porch light needs a new bulb.\n")
        idx.sync()  # the same text again, in a chunk with a newer id
        res = idx.search("porch light bulb")
        again = [r["path"] for r in res["results"][:2]]
    assert res["mode"] == "hybrid"
    assert first == again == ["memory/a.md", "memory/b.md"]
