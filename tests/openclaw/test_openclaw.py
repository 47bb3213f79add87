from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Runner, cli_json, write
from daemon_util import rpc, wait_for

from indexer.config import Config
from indexer.config.file import load_settings
from indexer.errors import ConfigError
from indexer.openclaw import load_openclaw


def sample(tmp_path: Path) -> Path:
    ws1, ws2, docs = tmp_path / "ws-main", tmp_path / "ws-ops", tmp_path / "docs"
    write(ws1, "MEMORY.md", "# main\n- the heron is the main agent's bird\n")
    write(ws2, "memory/2026-01-01.md", "# ops\n- the ops agent watches the pager\n")
    write(docs, "guide/setup.md", "# setup\n- install the quokka toolkit\n")
    write(docs, "skip.txt", "not markdown")
    notes = Path.home() / "notes"
    write(notes, "idea.md", "# idea\n- a lamp shaped like a narwhal\n")
    return write(
        tmp_path,
        "openclaw.json",
        f"""
    // OpenClaw config: JSON5 with comments, trailing commas and bare keys
    {{
      agents: {{
        defaults: {{
          workspace: "{ws1}",
          memorySearch: {{
            provider: "none",
            sources: ["memory", "sessions",],
            extraPaths: ["~/notes"],
            chunking: {{ tokens: 300, overlap: 60 }},
            sync: {{ watchDebounceMs: 800, sessions: {{ deltaBytes: 5000 }} }},
            query: {{ maxResults: 8, minScore: 0.4,
                      hybrid: {{ vectorWeight: 0.6, textWeight: 0.4, candidateMultiplier: 5 }} }},
            store: {{ path: "~/.openclaw/memory/{{agentId}}.sqlite" }},  /* not ours */
            cache: {{ maxEntries: 1234 }},
          }},
        }},
        list: [
          {{ id: "ops", workspace: "{ws2}", memorySearch: {{ query: {{ maxResults: 3 }} }} }},
          {{ id: "main", default: true }},
        ],
      }},
      memory: {{ backend: "qmd", qmd: {{ paths: [ {{ path: "{docs}", name: "docs",
                                                   pattern: "**/*.md" }} ] }} }},
      channels: {{ telegram: {{ enabled: true }} }},  // unrelated settings are ignored
    }}
    """,
    )


def test_mapping(tmp_path: Path) -> None:
    main, ops = load_openclaw(sample(tmp_path))
    assert (main.agent_name, ops.agent_name) == ("main", "ops")  # the default agent first
    assert main.workspace == tmp_path / "ws-main" and ops.workspace == tmp_path / "ws-ops"
    assert (main.chunking.tokens, main.chunking.overlap) == (300, 60)
    assert main.query.maxResults == 8 and ops.query.maxResults == 3
    assert ops.query.minScore == 0.4  # merged field by field
    assert (main.hybrid.vectorWeight, main.hybrid.textWeight) == (0.6, 0.4)
    assert main.hybrid.candidateMultiplier == 5 and main.cache.maxEntries == 1234
    assert main.sync.watchDebounceMs == 800 and main.sessions.deltaBytes == 5000
    assert main.provider.name == "none"
    assert main.sessions_dir() == Path.home() / ".openclaw/agents/main/sessions"
    extras = {(e.path, e.pattern) for e in main.extraPaths}
    assert (Path.home() / "notes", None) in extras  # ~ expanded (OpenClaw #58027)
    assert (tmp_path / "docs", "**/*.md") in extras
    for cfg in (main, ops):  # never inside OpenClaw's own files
        assert ".openclaw" not in str(cfg.resolved_index_path())


def test_sessions_dir_follows_openclaws_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCLAW_HOME", str(tmp_path / "oh"))
    main = load_openclaw(sample(tmp_path))[0]
    assert main.sessions_dir() == tmp_path / "oh/.openclaw/agents/main/sessions"
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    main = load_openclaw(sample(tmp_path))[0]
    assert main.sessions_dir() == tmp_path / "state/agents/main/sessions"


def test_memory_only_sources_disable_sessions(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "oc.json",
        '{agents: {defaults: {workspace: "/tmp", memorySearch: {sources: ["memory"]}}}}',
    )
    (cfg,) = load_openclaw(f)
    assert cfg.sessions_dir() is None and cfg.agent_name == "main"
    bad = write(tmp_path, "bad.json", "{agents: ")
    with pytest.raises(ConfigError, match="not valid JSON5"):
        load_settings(openclaw=bad)


@pytest.mark.parametrize(
    "text",
    [
        '{agents: {defaults: "x"}}',
        "{memory: {search: 5}}",
        '{agents: {list: [{id: "a", memorySearch: "x"}]}}',
        '{agents: {entries: {b: {memory: {search: "s"}}}}}',
        '{agents: {defaults: {memorySearch: {chunking: "x", query: 5, hybrid: [], '
        'remote: "z", local: 7, sync: {sessions: 3}}}}}',
        '{agents: {defaults: {memorySearch: {query: {hybrid: "q"}}}}}',
        # JSON5 has NaN and Infinity: a number setting holding one is unusable too
        "{agents: {defaults: {memorySearch: {chunking: {tokens: NaN, overlap: Infinity}}}}}",
        "{agents: {defaults: {memorySearch: {query: {maxResults: NaN}, cache: {maxEntries: NaN},"
        " sync: {watchDebounceMs: 1e400,"
        " sessions: {deltaBytes: NaN, deltaMessages: -Infinity}}}}}}",
        "{agents: {defaults: {memorySearch: {query: {maxResults: 1" + "0" * 400 + "}}}}}",
    ],
)
def test_a_setting_of_the_wrong_type_keeps_memindexs_value(tmp_path: Path, text: str) -> None:
    """Someone else's file: a string or a number where an object belongs is ignored
    (the agents load with memindex's values), never a crash of every command."""
    (cfg,) = load_openclaw(write(tmp_path, "oc.json", text))
    assert cfg.chunking == Config().chunking and cfg.query.maxResults == Config().query.maxResults


def test_two_agents_of_one_id_are_both_indexed_the_second_as_openclaw_doctor_names_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two agents whose ids normalise alike were one, the second dropped without a
    word; `openclaw doctor` moves a second "main" to "main-2" (a third to "main-3"):
    so does memindex, each with its own workspace and sessions folder, and says so."""
    for name in ("a", "b", "c", "d"):
        (tmp_path / name).mkdir()
    f = write(
        tmp_path,
        "oc.json",
        "{agents: {list: [{id: 'main', workspace: 'a'}, {id: 'Main', workspace: 'b'},"
        " {id: 'main', workspace: 'c'}], entries: {ops: {workspace: 'd'}}}}",
    )
    cfgs = load_openclaw(f)
    got = {c.agentId: c.workspace.name for c in cfgs if c.workspace is not None}
    assert got == {"main": "a", "main-2": "b", "main-3": "c", "ops": "d"}
    assert {Path(c.sessions.dir).parent.name for c in cfgs} == set(got)
    assert "'Main' indexed as 'main-2'" in caplog.text and "as 'main-3'" in caplog.text


@pytest.mark.parametrize("workspace", ['["/tmp"]', "42", '"/tmp/a\\u0000b"'])
def test_a_workspace_that_is_no_path_is_refused(tmp_path: Path, workspace: str) -> None:
    f = write(
        tmp_path, "oc.json", f"{{agents: {{list: [{{id: 'main', workspace: {workspace}}}]}}}}"
    )
    with pytest.raises(ConfigError, match="workspace must be a path"):
        load_openclaw(f)


def test_an_openclaw_config_that_is_no_file_is_refused_without_blocking(tmp_path: Path) -> None:
    import contextlib
    import os
    import threading

    fifo = tmp_path / "openclaw.json"
    os.mkfifo(fifo)  # nothing writes to it: a plain read would wait for a writer

    def unblock() -> None:  # a read that blocked (the bug) ends here, and fails below
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    timer = threading.Timer(5.0, unblock)
    timer.start()
    try:
        with pytest.raises(ConfigError, match="is a FIFO, not a file"):
            load_openclaw(fifo)
    finally:
        timer.cancel()
    from indexer.surfaces.openclaw.features import features_report

    with pytest.raises(ConfigError, match="is a FIFO"):
        features_report(fifo)
    odd = write(tmp_path, "odd.json", '{plugins: "x"}')
    assert "the memory slot is memory-core's" in features_report(odd)
    deep = write(tmp_path, "deep.json", "{a:" * 5000 + "1" + "}" * 5000)
    with pytest.raises(ConfigError, match="nested too deep"):
        features_report(deep)


def test_the_users_time_zone_is_openclaws(tmp_path: Path) -> None:
    f = write(tmp_path, "oc.json", '{agents: {defaults: {workspace: "/tmp", '
              'userTimezone: "America/Chicago"}}}')  # fmt: skip
    assert load_openclaw(f)[0].query.timeZone == "America/Chicago"
    odd = write(tmp_path, "odd.json", '{agents: {defaults: {userTimezone: "Mars/Base"}}}')
    assert load_openclaw(odd)[0].query.timeZone == ""  # a name it cannot read: the host's


def test_cli_index_and_search(cli: Runner, tmp_path: Path) -> None:
    f = sample(tmp_path)
    rep = cli_json(cli, "--openclaw-config", str(f), "index", "--json")
    assert rep["indexPath"].endswith("/main.sqlite") and rep["added"] == 3
    res = cli_json(cli, "--openclaw-config", str(f), "search", "quokka toolkit", "--json")
    assert res["results"][0]["path"] == "extra/docs/guide/setup.md"
    rep = cli_json(cli, "--openclaw-config", str(f), "--agent", "ops", "index", "--json")
    assert rep["indexPath"].endswith("/ops.sqlite")


def test_serve_with_openclaw_config(tmp_path: Path) -> None:
    f = sample(tmp_path)
    sock = tmp_path / "run" / "s.sock"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "indexer.surfaces.cli",
            "--openclaw-config",
            str(f),
            "serve",
            "--socket",
            str(sock),
        ],
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: rpc(sock, "status", {"agent": "main"})["lastSync"] is not None, timeout=60)
        assert rpc(sock, "status")["agents"] == ["main", "ops"]
        main = rpc(sock, "status", {"agent": "main"})
        assert main["sources"]["memory"]["files"] == 3  # MEMORY.md + ~/notes + docs
        hit = rpc(sock, "memory_search", {"query": "narwhal lamp"})["results"][0]
        assert hit["path"] == "extra/notes/idea.md"
        ops = rpc(sock, "memory_search", {"query": "pager", "agent": "ops"})["results"]
        assert ops[0]["path"] == "memory/2026-01-01.md"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_a_broken_openclaw_config_still_shows_and_stops_its_daemon(tmp_path: Path) -> None:
    """An edit that breaks an openclaw.json (not OpenClaw's default one: its own
    daemon and socket): `status` shows the daemon, which goes on with the config it
    had, and says why the file is refused; `serve --stop` stops it. Both read the
    default socket instead (status failed; stop needed a config that loads)."""
    f = sample(tmp_path)
    run = tmp_path / "rt"
    run.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(run)}
    cmd = [sys.executable, "-m", "indexer.surfaces.cli", "--openclaw-config", str(f)]
    proc = subprocess.Popen(
        [*cmd, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        sock = wait_for(lambda: next(run.glob("memindex-*.sock"), None), timeout=60)
        wait_for(lambda: rpc(sock, "status", {"agent": "main"})["lastSync"] is not None, timeout=60)
        f.write_text("{agents: [not json5")
        r = subprocess.run([*cmd, "status"], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "does not load" in r.stderr and "not valid JSON5" in r.stderr
        assert "daemon:    pid" in r.stdout
        r = subprocess.run(
            [*cmd, "serve", "--stop"], env=env, capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0 and "stopped the daemon" in r.stdout, r.stdout + r.stderr
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


def test_an_openclaw_config_replaced_by_a_broken_link_keeps_its_daemons_socket(
    tmp_path: Path,
) -> None:
    """The socket and index folder of an openclaw.json come from its path: replaced
    by a link to nothing (or a loop of links), its identity followed the link's
    target, so status and serve --stop looked for another daemon (and a loop was an
    internal error)."""
    from indexer.config.file import socket_despite

    f = sample(tmp_path)
    sock = load_openclaw(f)[0].socket_path()
    assert socket_despite(None, f) == sock
    f.rename(tmp_path / "kept.json")
    f.symlink_to(tmp_path / "nowhere.json")
    assert socket_despite(None, f) == sock
    f.unlink()
    f.symlink_to(tmp_path / "other.json")
    (tmp_path / "other.json").symlink_to(f)
    assert socket_despite(None, f) == sock
