from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import Runner, write
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from indexer.config import Config, SessionsConfig
from indexer.sources.transcripts.distill import MAX_BATCH_MESSAGES, Distiller


def msg(text: str, role: str = "user") -> str:
    return json.dumps(
        {"type": "message", "role": role, "content": text, "timestamp": "2026-11-21T10:00:00Z"}
    )


def agent(tmp: Path) -> Config:
    return Config(
        workspace=tmp,
        agentId="main",
        stateDir=tmp / "state",
        sessions=SessionsConfig(dir=str(tmp / "sessions")),
    )


def test_protocol_outputs_and_filters(tmp_path: Path, cli: Runner) -> None:
    s = tmp_path / "sessions"
    write(s, "a.jsonl", msg("old message before init") + "\n")
    d = Distiller([agent(tmp_path)])
    assert d.init() == {"ok": True, "action": "initialized", "files": 1}
    assert d.run() == {"ok": True, "action": "noop"}
    with (s / "a.jsonl").open("a") as fh:
        for line in [
            msg("NO_REPLY", "assistant"),
            msg("/new"),
            msg("HEARTBEAT_OK"),
            msg("<relevant-memories>- Dana likes rye</relevant-memories>"),
            msg("remember that the gateway host is pantry-pi"),
            msg("token=supersecretvalue is in the env file", "assistant"),
            "{broken json",
        ]:
            fh.write(line + "\n")
    r = d.run()
    assert r["ok"] and r["action"] == "created" and r["messages"] == 2
    batch = json.loads(Path(r["batchFile"]).read_text())
    assert [m["text"] for m in batch["messages"]] == [
        "remember that the gateway host is pantry-pi",
        "token=[REDACTED] is in the env file",
    ]
    assert set(batch["messages"][0]) >= {"agent", "role", "text", "timestamp"}
    assert batch["batchId"] == r["batchId"]
    assert d.run() == {"ok": True, "action": "pending", "batchFile": r["batchFile"]}
    other = str(tmp_path / "not-it.json")
    try:
        d.commit(other)
        raise AssertionError("committing another file must fail")
    except Exception as exc:
        assert "pending batch is" in str(exc)
    assert d.commit(r["batchFile"])["action"] == "committed"
    assert not Path(r["batchFile"]).exists()
    assert d.run()["action"] == "noop"
    # Through the CLI: JSON on stdout, exit 1 with ok=false on misuse.
    conf = write(
        tmp_path,
        "c.toml",
        f'workspace = "{tmp_path}"\nagentId = "main"\n'
        f'stateDir = "{tmp_path / "state"}"\n[sessions]\ndir = "{s}"\n',
    )
    code, out, _ = cli("--config", str(conf), "distill", "commit")
    assert code == 1 and json.loads(out)["ok"] is False
    code, out, _ = cli("--config", str(conf), "distill", "run")
    assert code == 0 and json.loads(out)["action"] == "noop"


def test_large_delta_spans_batches_without_skipping(tmp_path: Path) -> None:
    s = tmp_path / "sessions"
    n = MAX_BATCH_MESSAGES * 2 + 17
    write(s, "a.jsonl", "".join(msg(f"message number {i}") + "\n" for i in range(n)))
    d = Distiller([agent(tmp_path)])
    got: list[str] = []
    while (r := d.run())["action"] == "created":
        got += [m["text"] for m in json.loads(Path(r["batchFile"]).read_text())["messages"]]
        d.commit(r["batchFile"])
    assert got == [f"message number {i}" for i in range(n)]
    names = {p.name for p in (tmp_path / "state" / "distill" / "batches").iterdir()}
    assert names == set()  # committed batches are removed


def test_truncated_and_regrown_to_the_same_size_is_read_again(tmp_path: Path) -> None:
    """Found by the state machine: the size alone cannot tell the file was replaced."""
    s = tmp_path / "sessions"
    write(s, "a.jsonl", msg("m0") + "\n")
    d = Distiller([agent(tmp_path)])
    r = d.run()
    d.commit(r["batchFile"])
    (s / "a.jsonl").write_text(msg("m1") + "\n")  # same length, same inode
    r = d.run()
    assert r["action"] == "created"
    assert [m["text"] for m in json.loads(Path(r["batchFile"]).read_text())["messages"]] == ["m1"]


@settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
class DistillMachine(RuleBasedStateMachine):
    """Transcripts grow, rotate and get truncated between run and commit calls."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp())
        self.sessions = self.tmp / "sessions"
        self.sessions.mkdir()
        self.d = Distiller([agent(self.tmp)])
        self.seq = 0
        self.live: dict[str, list[str]] = {}  # file name -> messages in it
        self.written: set[str] = set()
        self.in_batch: set[str] = set()  # delivered in a created batch
        self.delivered: list[str] = []  # committed
        self.lost: set[str] = set()  # destroyed by truncation before any batch had them
        self.pending: tuple[str, list[str]] | None = None
        self.rotations = 0

    @rule(n=st.integers(1, 6), name=st.sampled_from(["a.jsonl", "b.jsonl"]), noise=st.booleans())
    def append(self, n: int, name: str, noise: bool) -> None:
        with (self.sessions / name).open("a") as fh:
            for _ in range(n):
                text = f"m{self.seq}"
                self.seq += 1
                fh.write(msg(text) + "\n")
                if noise:
                    fh.write(msg("NO_REPLY", "assistant") + "\n")
                self.live.setdefault(name, []).append(text)
                self.written.add(text)

    @rule(name=st.sampled_from(["a.jsonl", "b.jsonl"]))
    def rotate(self, name: str) -> None:
        if name in self.live:
            self.rotations += 1
            new = f"{name}.reset.{self.rotations}"
            os.rename(self.sessions / name, self.sessions / new)
            self.live[new] = self.live.pop(name)

    @rule(name=st.sampled_from(["a.jsonl", "b.jsonl"]))
    def truncate(self, name: str) -> None:
        if name in self.live:
            self.lost |= {m for m in self.live[name] if m not in self.in_batch}
            (self.sessions / name).write_text("")
            self.live[name] = []

    @rule()
    def run(self) -> None:
        r = self.d.run()
        if r["action"] == "created":
            texts = [m["text"] for m in json.loads(Path(r["batchFile"]).read_text())["messages"]]
            assert not set(texts) & self.in_batch, "a message was delivered twice"
            assert len(texts) == len(set(texts))
            self.in_batch |= set(texts)
            self.pending = (r["batchFile"], texts)
        elif r["action"] == "pending":
            assert self.pending is not None and r["batchFile"] == self.pending[0]

    @rule()
    def commit(self) -> None:
        if self.pending is not None:
            self.d.commit(self.pending[0])
            self.delivered += self.pending[1]
            self.pending = None

    def teardown(self) -> None:
        try:
            self.commit()
            for _ in range(100):
                self.run()
                if self.pending is None:
                    break
                self.commit()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
        assert len(self.delivered) == len(set(self.delivered)), "duplicates"
        assert set(self.delivered) == self.written - self.lost, (
            f"lost: {sorted(self.written - self.lost - set(self.delivered))}"
        )


TestDistillProperty = pytest.mark.slow(DistillMachine.TestCase)  # hypothesis: ~3 s of CPU


def test_an_agent_database_it_does_not_read_is_named(tmp_path: Path) -> None:
    """OpenClaw 2026.9 keeps transcripts in the agent's database, which distill does
    not read: `init` said files 0 and `run` noop, as if there were nothing to read."""
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    db = write(tmp_path / "agents" / "main" / "agent", "openclaw-agent.sqlite", "")
    cfg = Config(
        workspace=tmp_path / "ws", stateDir=tmp_path / "state",
        sessions=SessionsConfig(dir=str(sessions)),
    )  # fmt: skip
    d = Distiller([cfg])
    for answer in (d.init(), d.run()):
        assert answer["unread"] == [
            {"agent": cfg.agent_name, "path": str(db), "reason": answer["unread"][0]["reason"]}
        ]
        assert "agent database" in answer["unread"][0]["reason"]
    assert "unread" not in Distiller([agent(tmp_path / "plain")]).run()
