"""``memindex model pull|list``: the local embedding models by name (the catalogue in
``providers.models``), fetched into the model cache with no model hub."""

from __future__ import annotations

import json
from pathlib import Path

from indexer.config import Config, default_config_path
from indexer.errors import ConfigError
from indexer.surfaces.cli.parts import Call

__all__ = ["run_model"]


def run_model(c: Call) -> int:
    from providers.auto import model_cache
    from providers.errors import ProviderError
    from providers.models import MODELS, ModelBuildError, listing, pull

    args, out, err = c.args, c.out, c.err
    cfg = c.config()
    local = cfg.provider.local
    cache = Path(local.modelCacheDir) if local.modelCacheDir else model_cache()
    if args.action == "list":
        entries = listing(cache)
        if args.json:
            return c.json({"cache": str(cache), "models": entries})
        out.write(f"model cache: {cache}\n")
        for e in entries:
            state = f"pulled, {e['bytes'] / 1e6:.0f} MB" if e["pulled"] else "not pulled"
            out.write(f"  {e['name']:<10} {state}\n")
            if e["about"]:
                out.write(f"             {e['about']}\n")
        return 0
    if not args.name:
        raise ConfigError("model pull needs a name: e5-small, minilm or hf:<owner>/<repo>/<file>")
    if args.name not in MODELS and not args.name.startswith("hf:"):
        raise ConfigError(
            f"unknown model {args.name!r}: one of {', '.join(MODELS)}, or "
            "hf:<owner>/<repo>/<file>.gguf"
        )
    err.write(f"memindex: pulling {args.name} into {cache} ...\n")
    err.flush()
    try:
        path = pull(args.name, cache, force=args.force)
    except ModelBuildError as exc:
        err.write(f"memindex: error: {exc}\n")
        return 2
    except ProviderError as exc:
        err.write(f"memindex: error: {exc.message}\n")
        return 2
    used = None
    if args.use:
        used = _use(c, cfg, args.name, path)
    if args.json:
        return c.json({"name": args.name, "path": str(path), "config": used})
    out.write(f"{path}\n")
    if used:
        err.write(
            f"memindex: {used} now uses it; a running daemon picks it up on "
            "`systemctl --user reload memindex` (SIGHUP) or a restart, and re-embeds the index\n"
        )
    return 0


# The settings each bundled model ranks best with (docs/SEARCH.md, "Local model"):
# `model pull NAME --use` writes them with the model.
RECOMMENDED: dict[str, dict[tuple[str, str], float]] = {
    "e5-small": {("hybrid", "vectorWeight"): 0.4, ("hybrid", "textWeight"): 0.6},
    "minilm": {("hybrid", "vectorWeight"): 0.3, ("hybrid", "textWeight"): 0.7},
}


def _use(c: Call, cfg: Config, name: str, path: Path) -> str:
    """Make the config file use the model (``cfg``: what it says now); its path."""
    from indexer.config.edit import set_key

    config = c.args.config or default_config_path()
    key, value = ("modelPath", str(path)) if name.startswith("hf:") else ("model", name)
    other = "model" if key == "modelPath" else "modelPath"
    if getattr(cfg.provider.local, other):
        raise ConfigError(
            f"{config} sets provider.local.{other}; remove that line to use "
            f"provider.local.{key} = {json.dumps(value)}"
        )
    set_key(config, "provider.local", key, value)
    for (table, setting), want in RECOMMENDED.get(name, {}).items():  # what docs/SEARCH.md says
        set_key(config, table, setting, want)
        c.err.write(f"memindex: set {table}.{setting} = {want} (measured best with {name})\n")
    if cfg.provider.name not in ("auto", "local"):
        c.err.write(
            f"memindex: note: provider.name = {cfg.provider.name} still chooses that provider\n"
        )
    return str(config)
