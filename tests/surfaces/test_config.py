from __future__ import annotations

from pathlib import Path

import pytest

from indexer.config.file import parse_config
from indexer.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_example_config_parses_with_defaults() -> None:
    import tomllib

    data = tomllib.loads((REPO / "config" / "memindex.toml").read_text())
    cfg, agents = parse_config(data, source=REPO / "config" / "memindex.toml")
    assert agents == ()
    assert cfg.chunking.tokens == 400 and cfg.chunking.overlap == 80
    assert cfg.query.maxResults == 6 and cfg.query.minScore == 0.35
    assert cfg.query.abstainBelow == 0.1 and cfg.rerank.provider == ""
    assert cfg.rerank == type(cfg.rerank)()  # the example's [rerank] is the defaults


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"chunkin": {}}, "unknown key"),
        ({"chunking": {"tokens": "400"}}, "chunking.tokens"),
        ({"chunking": {"tokens": 100, "overlap": 100}}, "overlap"),
        ({"query": {"minScore": 3}}, "minScore"),
        ({"query": {"maxResults": True}}, "maxResults"),
        ({"extraPaths": "notes"}, "extraPaths"),
        ({"extraPaths": [{"path": "x", "glob": "*.md"}]}, "extraPaths"),
        ({"agentId": "../evil"}, "agentId"),
        ({"ignore": [1]}, "ignore"),
    ],
)
def test_bad_config_is_a_clear_error(data: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_config(data)


def test_paths_relative_to_the_config_file(tmp_path: Path) -> None:
    cfg, _ = parse_config(
        {"workspace": "ws", "extraPaths": ["notes", {"path": "~/p", "pattern": "*.md"}]},
        source=tmp_path / "c.toml",
    )
    assert cfg.workspace == tmp_path / "ws"
    assert cfg.extraPaths[0].path == tmp_path / "notes"
    assert cfg.extraPaths[1].pattern == "*.md"
    assert str(cfg.extraPaths[1].path).startswith(str(Path.home()))


def test_sessions_default_only_for_openclaw_agents(tmp_path: Path) -> None:
    from indexer.config import Config, SessionsConfig

    home = Path.home()
    notes = tmp_path / "notes"
    assert Config(workspace=notes).sessions_dir() is None
    assert Config(workspace=notes, agentId="ops").sessions_dir() == (
        home / ".openclaw" / "agents" / "ops" / "sessions"
    )
    oc = home / ".openclaw" / "workspace"
    oc.mkdir(parents=True, exist_ok=True)
    assert Config(workspace=oc).sessions_dir() == home / ".openclaw/agents/main/sessions"
    explicit = Config(workspace=notes, sessions=SessionsConfig(dir=str(tmp_path / "s")))
    assert explicit.sessions_dir() == tmp_path / "s"
    assert Config(workspace=oc, sessions=SessionsConfig(enabled=False)).sessions_dir() is None


def test_unknown_keys_say_where_they_belong(tmp_path: Path) -> None:
    from indexer.config.file import load_config
    from indexer.errors import ConfigError

    cases = {
        "maxResults = 3\n": "'maxResults' belongs under [query]",
        "[provder]\nname = 'none'\n": "'provder' (did you mean 'provider'?)",
        "[query]\nmaxResult = 3\n": (
            "unknown key 'query.maxResult' (did you mean 'query.maxResults'?)"
        ),
        "colour = 'blue'\n": "'colour' is not a memindex setting",
    }
    for text, says in cases.items():
        f = tmp_path / "c.toml"
        f.write_text(text)
        with pytest.raises(ConfigError) as exc:
            load_config(f, workspace=tmp_path)
        assert says in exc.value.message, exc.value.message


def test_the_model_cache_follows_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from providers.auto import ProviderSpec

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert ProviderSpec().model_cache_dir == tmp_path / "cache" / "memindex" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert ProviderSpec().model_cache_dir == Path.home() / ".cache" / "memindex" / "models"
