from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Runner, cli_json, write

from indexer.surfaces.cli.parts import parser as _parser


def test_index_search_get_status_json(cli: Runner, workspace: Path) -> None:
    ws = str(workspace)
    rep = cli_json(cli, "--workspace", ws, "index", "--json")
    assert rep["added"] == 3 and Path(rep["indexPath"]).exists()
    res = cli_json(cli, "--workspace", ws, "search", "rye bread", "--json")
    assert set(res) == {"results", "provider", "model", "mode", "fallback"}
    top = res["results"][0]
    for key in ("path", "startLine", "endLine", "score", "snippet", "source", "citation"):
        assert key in top
    assert top["path"] == "MEMORY.md" and top["source"] == "memory"
    kw = cli_json(cli, "--workspace", ws, "search", "rye bread", "--mode", "keyword", "--json")
    assert kw["mode"] == "keyword" and kw["fallback"] is None and kw["results"] == res["results"]
    got = cli_json(
        cli, "--workspace", ws, "get", "MEMORY.md", "--from", "4", "--lines", "1", "--json"
    )
    assert got == {
        "path": "MEMORY.md",
        "text": "- Dana likes rye bread.",
        "from": 4,
        "lines": 1,
        "totalLines": 5,
        "truncated": False,
    }
    st = cli_json(cli, "--workspace", ws, "status", "--json")
    assert st["sources"]["memory"] == {"files": 3, "chunks": 4}  # MEMORY.md: 2 entries
    assert st["sqlite"]["sqlite"] and st["mode"] == "keyword"


def test_human_output(cli: Runner, workspace: Path) -> None:
    ws = str(workspace)
    code, out, _ = cli("--workspace", ws, "index")
    assert code == 0 and "3 added" in out
    code, out, _ = cli("--workspace", ws, "search", "garden gate")
    assert code == 0 and out.startswith("0.") and "memory/2026-11-01.md:1-4" in out
    code, out, _ = cli("--workspace", ws, "search", "zeppelin")
    assert code == 0 and out == "No results.\n"
    code, out, _ = cli("--workspace", ws, "get", "memory/2026-11-02.md")
    assert out == "# 2026-11-02\n\n- Read about sourdough starters.\n"
    code, out, _ = cli("--workspace", ws, "status")
    assert "memory:    3 files, 4 chunks" in out


def test_errors_are_one_line_and_exit_2(cli: Runner, workspace: Path, tmp_path: Path) -> None:
    ws = str(workspace)
    code, _, err = cli("--workspace", ws, "search", "x")
    assert code == 2 and "run 'memindex index' first" in err
    # memory_get reads the files themselves: it works before the first index
    code, out, _ = cli("--workspace", ws, "get", "MEMORY.md", "--from", "1", "--lines", "1")
    assert code == 0 and out.strip() == (workspace / "MEMORY.md").read_text().splitlines()[0]
    cli("--workspace", ws, "index")
    code, _, err = cli("--workspace", ws, "get", "../etc/passwd")
    assert code == 2 and err.startswith("memindex: error: refused path")
    code, _, err = cli("--workspace", str(tmp_path / "nope"), "index")
    assert code == 2 and "does not exist" in err
    code, _, err = cli("--config", str(tmp_path / "missing.toml"), "status")
    assert code == 2 and "does not exist" in err
    bad = write(tmp_path, "bad.toml", "chunking = { tokens = 'many' }\n")
    code, _, err = cli("--config", str(bad), "index")
    assert code == 2 and "chunking.tokens" in err
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")  # a workspace that is a loop
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")  # of links: an internal error
    for command in ("status", "index", "search"):
        code, _, err = cli(
            "--workspace", str(tmp_path / "loop-a"), command, *["x"][: command == "search"]
        )
        assert code == 2 and "does not exist" in err, err


def test_config_file_and_default_workspace(cli: Runner, workspace: Path, tmp_path: Path) -> None:
    conf = write(
        tmp_path,
        "config.toml",
        f'workspace = "{workspace}"\nagentId = "main"\n[chunking]\ntokens = 200\noverlap = 40\n',
    )
    rep = cli_json(cli, "--config", str(conf), "index", "--json")
    assert rep["indexPath"].endswith("/memindex/main.sqlite")
    # With no config and no --workspace, OpenClaw's default workspace is used.
    code, _, err = cli("status")
    assert code == 2 and "no workspace" in err
    oc = Path(os.environ["HOME"]) / ".openclaw" / "workspace"
    write(oc, "MEMORY.md", "# Memory\n- openclaw default workspace\n")
    rep = cli_json(cli, "index", "--json")
    assert rep["added"] == 1


def test_every_command_has_help() -> None:
    parser = _parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():  # type: ignore[union-attr]
        assert p.description or any(
            c.dest == name and c.help
            for c in sub._choices_actions  # type: ignore[union-attr]
        ), name
        for action in p._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.dest}"


def test_console_script_runs_piped_without_progress(workspace: Path, tmp_path: Path) -> None:
    for i in range(120):
        write(workspace, f"memory/bulk/{i:03d}.md", f"# note {i}\n- item {i}\n")
    exe = Path(sys.executable).parent / "memindex"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "indexer.surfaces.cli"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(
        [*cmd, "--workspace", str(workspace), "index"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "[#" not in proc.stderr  # quiet when piped
    proc = subprocess.run(
        [*cmd, "--workspace", str(workspace), "search", "item 7", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert json.loads(proc.stdout)["results"]


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal(workspace: Path) -> None:
    import io

    from indexer.surfaces.cli.parts import ProgressBar as _ProgressBar

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    s = Tty()
    bar = _ProgressBar(s, "indexing")
    for i in range(0, 101, 10):
        bar(i, 100)
    bar.close()
    assert "[" in s.getvalue() and "100/100" in s.getvalue()


def test_doctor(cli: Runner, workspace: Path, tmp_path: Path) -> None:
    ws = str(workspace)
    code, out, _ = cli("--workspace", ws, "doctor")
    assert code == 0, out
    assert "ok   workspace" in out and "3 memory files" in out
    assert "not built yet" in out and "keyword search only" in out
    cli("--workspace", ws, "index")
    checks = cli_json(cli, "--workspace", ws, "doctor", "--json")
    by = {c["check"]: c for c in checks}
    assert by["index"]["ok"] and "integrity ok" in by["index"]["detail"]
    assert by["sqlite-vec"]["ok"] and by["tokenizer"]["ok"]
    # what --abstain can tell is said, not claimed
    assert by["abstain"]["ok"] and "cannot tell" in by["abstain"]["detail"]
    bad = write(
        tmp_path,
        "bad.toml",
        f'workspace = "{ws}"\n[provider]\nname = "local"\n'
        f'[provider.local]\nmodelPath = "{tmp_path}/missing.gguf"\n',
    )
    code, out, _ = cli("--config", str(bad), "doctor")
    assert code == 1 and "FAIL provider" in out and "does not exist" in out
    code, out, _ = cli("--workspace", str(tmp_path / "nope"), "doctor")
    assert code == 1 and "FAIL workspace" in out


def test_doctor_right_after_install_names_the_next_step(cli: Runner, tmp_path: Path) -> None:
    """No workspace given anywhere (no flag, no config file, no OpenClaw): the
    installation checks pass and the workspace is the step to take, not a failure;
    a config file that names no workspace still fails."""
    code, out, _ = cli("doctor")
    assert code == 0, out
    assert "todo workspace   none yet: pass --workspace DIR" in out and "FAIL" not in out
    assert "todo index" in out and "ok   sqlite-vec" in out
    by = {c["check"]: c for c in cli_json(cli, "doctor", "--json")}
    assert by["workspace"]["todo"] and by["workspace"]["ok"]
    assert by["workspace"]["detail"].startswith("none yet") and "todo" not in by["tokenizer"]
    conf = write(tmp_path, "c.toml", "[query]\nmaxResults = 4\n")
    code, out, _ = cli("--config", str(conf), "doctor")
    assert code == 1 and "FAIL workspace   no workspace" in out


def test_doctor_reports_a_config_it_cannot_read(cli: Runner, tmp_path: Path) -> None:
    """A broken or missing config file is doctor's first FAIL, not an error that
    stops it: the checks that need no config still run."""
    broken = write(tmp_path, "broken.toml", "[query\nmaxResults = \n")
    for conf in (broken, tmp_path / "missing.toml"):
        code, out, err = cli("--config", str(conf), "doctor")
        assert code == 1, (out, err)
        assert out.startswith("FAIL config") and str(conf) in out
        assert "ok   tokenizer" in out and "ok   sqlite-vec" in out
    code, out, _ = cli("--config", str(broken), "doctor", "--json")
    by = {c["check"]: c for c in json.loads(out)}
    assert code == 1 and not by["config"]["ok"] and by["sqlite-vec"]["ok"]
    folder = tmp_path / "a-folder.toml"
    folder.mkdir()
    code, out, _ = cli("--config", str(folder), "doctor")
    assert code == 1 and "is a directory, not a file" in out  # not "does not exist"


def test_doctor_names_a_socket_path_too_long_to_listen_on(
    cli: Runner, workspace: Path, tmp_path: Path
) -> None:
    sock = tmp_path / ("d" * 120) / "memindex.sock"
    conf = write(tmp_path, "c.toml", f'workspace = "{workspace}"\n[server]\nsocket = "{sock}"\n')
    code, out, _ = cli("--config", str(conf), "doctor")
    assert code == 1 and "FAIL daemon" in out and "over the" in out and "shorter path" in out


def test_small_first_run_defects(cli, workspace: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ws = str(workspace)
    assert cli("--workspace", ws, "index")[0] == 0
    code, out, err = cli("--workspace", ws, "get", "MEMORY.md", "--from", "50")
    assert code == 2 and "past the end" in err and "5 lines" in err
    code, _, err = cli("--workspace", str(tmp_path / "nope"), "status")
    assert code == 2 and "does not exist" in err and "MEMORY.md" in err
    forced = cli_json(cli, "--workspace", ws, "index", "--force", "--json")
    assert forced["rebuilt"] == "forced" and forced["seconds"] > 0
    direct = cli_json(cli, "--workspace", ws, "search", "rye", "--json")
    assert direct["fallback"] == "no embedding provider configured: keyword search only"


def test_search_output_cites_the_snippets_own_lines(cli: Runner, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    body = "\n".join(f"- line {i} about nothing much" for i in range(1, 30))
    write(ws, "memory/notes.md", "# Notes\n\n" + body + "\n- the heron nests by the pond\n")
    cli_json(cli, "--workspace", str(ws), "index", "--json")
    code, out, _ = cli("--workspace", str(ws), "search", "heron", "--max-results", "1")
    first = out.splitlines()[0]
    res = cli_json(cli, "--workspace", str(ws), "search", "heron", "--json")["results"][0]
    a, b = res["snippetStartLine"], res["snippetEndLine"]
    assert first == f"{res['score']:.3f} memory/notes.md:{a}-{b}  (in lines 1-32)", first
    assert out.splitlines()[1].strip(), "the snippet starts with a blank line"


def test_options_are_checked_by_their_own_names(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args, says in (
        (["search", "x", "--min-score", "2"], "argument --min-score: 2 is not between 0 and 1"),
        (["search", "x", "--max-results", "0"], "argument --max-results: 0 is below 1"),
        (["get", "MEMORY.md", "--from", "zero"], "argument --from: 'zero' is not a whole number"),
    ):
        with pytest.raises(SystemExit) as exc:
            _parser().parse_args(["--workspace", str(workspace), *args])
        assert exc.value.code == 2 and says in capsys.readouterr().err
    r = subprocess.run(
        [sys.executable, "-m", "indexer.surfaces.cli", "search", "x", "--min-score", "2"],
        capture_output=True,
        text=True,
    )
    assert "argument --min-score: 2 is not between 0 and 1" in r.stderr


def test_status_before_the_first_index_is_a_state(cli: Runner, workspace: Path) -> None:
    code, out, err = cli("--workspace", str(workspace), "status")
    assert code == 0, err
    assert "(not built yet: run 'memindex index')" in out.splitlines()[0]
    st = cli_json(cli, "--workspace", str(workspace), "status", "--json")
    assert st["lastSync"] is None and st["dirty"] and st["files"] == 0
    assert st["workspace"] == str(workspace.resolve())


def test_mcp_without_a_workspace_fails_at_start(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    r = subprocess.run(
        [sys.executable, "-m", "indexer.surfaces.cli", "mcp"],
        input="",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 2 and "no workspace" in r.stderr


def test_one_agent_name_for_the_openclaw_workspace(cli: Runner, tmp_path: Path) -> None:
    """OpenClaw's own workspace is agent main, and its index main.sqlite: `--agent
    main` names the same index (it named another file before); an index made before
    under the workspace's name is taken over."""
    from indexer.config import Config

    home = Path(os.environ["HOME"])
    ws = write(home, ".openclaw/workspace/MEMORY.md", "# Memory\n- the heron nests\n").parent
    old = Config(workspace=ws).legacy_index_path()
    assert old is not None and old.name.startswith("ws-workspace-")
    cli_json(cli, "--agent", "main", "index", "--json")  # an old-style index, moved aside
    state = old.parent
    os.replace(state / "main.sqlite", old)
    rep = cli_json(cli, "index", "--json")  # no --agent, no --workspace: OpenClaw's
    assert rep["unchanged"] == 1 and rep["indexPath"].endswith("/main.sqlite"), rep
    assert not old.exists()
    st = cli_json(cli, "--agent", "main", "status", "--json")
    assert st["indexPath"].endswith("/main.sqlite") and st["files"] == 1
    other = write(tmp_path, "notes/MEMORY.md", "# Notes\n").parent
    name = Config(workspace=other).agent_name
    assert name.startswith("ws-notes-")
    cli_json(cli, "--workspace", str(other), "index", "--json")
    st = cli_json(cli, "--agent", name, "status", "--json")
    assert st["workspace"] == str(other.resolve())


def test_a_missing_extra_names_the_command_that_adds_it(workspace: Path) -> None:
    """`memindex mcp` without its packages is one line naming the install command, and
    in a checkout that command is the checkout's own (no 'memindex' on the index)."""
    root = Path(__file__).resolve().parents[2]
    script = (
        "import sys; sys.modules['anyio'] = None\n"  # an import of it fails as if absent
        "from indexer.surfaces.cli import main\n"
        f"sys.exit(main(['--workspace', {str(workspace)!r}, 'mcp']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=root
    )
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr
    assert "memindex mcp needs the Python package anyio" in proc.stderr
    assert f"-m pip install -e '{root}[mcp]'" in proc.stderr

    from providers.errors import install_hint

    assert install_hint("local") == f"{sys.executable} -m pip install -e '{root}[local]'"


@pytest.mark.slow
def test_the_openclaw_bench_needs_no_test_tools() -> None:
    """`python bench/openclaw_bench.py --help` where pytest is not installed."""
    root = Path(__file__).resolve().parents[2]
    script = (
        "import runpy, sys; sys.modules['pytest'] = None\n"
        "sys.argv = ['bench/openclaw_bench.py', '--help']\n"
        "runpy.run_path('bench/openclaw_bench.py', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=root
    )
    assert proc.returncode == 0, proc.stderr
    assert "memory-core" in proc.stdout


def test_a_workspace_openclaw_names_finds_its_agents_transcripts(
    cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--workspace` alone on a folder OpenClaw's openclaw.json names as an agent's
    workspace reads that agent's transcripts (OPENCLAW_STATE_DIR as OpenClaw reads
    it); another folder reads none, and status and doctor say why and what to do."""
    state = tmp_path / "oc-state"
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    ws = tmp_path / "ops-ws"
    write(ws, "MEMORY.md", "# Memory\n- the ops runbook\n")
    agents = {"agents": {"list": [{"id": "ops", "workspace": str(ws)}]}}
    write(state, "openclaw.json", json.dumps(agents))
    line = {"type": "message", "message": {"role": "user", "content": "the TERN-5151 pager"}}
    write(state, "agents/ops/sessions/s1.jsonl", json.dumps(line) + "\n")
    assert cli("--workspace", str(ws), "index")[0] == 0
    res = cli_json(cli, "--workspace", str(ws), "search", "TERN-5151", "--json")
    assert [r["path"] for r in res["results"]] == ["sessions/s1.jsonl"]
    code, out, _ = cli("--workspace", str(ws), "doctor")
    assert "ok   transcripts" in out and "1 indexed from" in out, out
    notes = tmp_path / "notes"
    write(notes, "MEMORY.md", "# Memory\n- just notes\n")
    assert cli("--workspace", str(notes), "index")[0] == 0
    code, out, _ = cli("--workspace", str(notes), "status")
    assert "transcripts: none: this workspace is not an OpenClaw agent's" in out
    assert "sessions.dir is not set" in out
    code, out, _ = cli("--workspace", str(notes), "doctor")
    assert "transcripts" in out and "sessions.dir is not set" in out


def test_a_file_name_cannot_pass_for_more_result_lines() -> None:
    """A transcript named with a newline (or an escape sequence) is shown escaped in
    the text output: one result, one citation line."""
    import io

    from indexer.surfaces.cli.query import _print_hit

    out = io.StringIO()
    hit = {"path": "sessions/new\n0.999 fake.jsonl\x1b[2J", "startLine": 1, "endLine": 2,
           "score": 0.5, "snippet": "User: hi",
           "also": [{"citation": "sessions/x\ny.jsonl#L1"}]}  # fmt: skip
    _print_hit(hit, out)
    lines = out.getvalue().split("\n")
    assert lines[0] == "0.500 sessions/new\\n0.999 fake.jsonl\\x1b[2J:1-2"
    assert lines[1] == "      also sessions/x\\ny.jsonl#L1"


@pytest.mark.parametrize("flag", ["--workspace", "--config", "--openclaw-config"])
def test_an_empty_path_option_is_refused_not_read_as_here(flag: str) -> None:
    from indexer.surfaces.cli.parts import parser

    with pytest.raises(SystemExit):
        parser().parse_args([flag, "", "index"])
