"""The commands that read or write one agent's index: ``index``, ``search``, ``get``.
Each asks the daemon when one serves the index, else does the work itself."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, TextIO

from indexer import api
from indexer.errors import InvalidParams
from indexer.surfaces.cli.parts import Call, ProgressBar
from indexer.surfaces.client import Client
from indexer.surfaces.reading import FileService, daemon_socket, read_call

__all__ = ["run_get", "run_index", "run_search"]


def run_index(c: Call) -> int:
    cfg, args, out, err = c.config(), c.args, c.out, c.err
    sock = daemon_socket(cfg)
    if sock is not None:  # the daemon is the one writer: let it do the work
        report: dict[str, Any] = dict(
            Client(sock, cfg.agent_name).reindex(force=args.force, timeout=3600)
        )
    else:  # this process is the writer, through the same method table
        c.setup_logging()
        from indexer.indexing.progress import WorkProgress

        bar = ProgressBar(err, "indexing")
        try:
            service = FileService(cfg, progress=WorkProgress(bar.show))
            report = dict(api.dispatch(service, "reindex", {"force": args.force}))
        finally:
            bar.close()
    index_path = report.pop("indexPath", str(cfg.resolved_index_path()))
    state = report.pop("providerState", None)
    if state and state.get("state") == "failed":  # loud: hybrid search is off
        err.write(
            f"memindex: warning: no vectors, keyword search only: the {state['name']} "
            f"provider failed: {state['reason']}\n  fix: {state['fix']}\n"
        )
    if args.json:
        return c.json({"indexPath": index_path, **report, "providerState": state})
    r = report
    emb = r.get("embedding")
    embed_s = float(emb.get("seconds") or 0.0) if emb else 0.0  # shown on its own line
    if r.get("rebuilt"):
        out.write(f"rebuilt the index ({r['rebuilt']})\n")
    out.write(
        f"{r['files']} files: {r['added']} added, {r['updated']} updated, "
        f"{r['unchanged']} unchanged, {r['removed']} removed; "
        f"{r['chunksWritten']} chunks written in {max(0.0, r['seconds'] - embed_s):.2f}s"
        + (" (through the daemon)" if sock else "")
        + "\n"
    )
    sess = r.get("sessions") or {}
    if sess.get("files"):
        out.write(
            f"sessions: {sess['files']} transcripts, {sess['messages']} new messages"
            f", {sess['malformed']} malformed lines skipped\n"
        )
    if emb:
        out.write(
            f"vectors: {emb['embedded']} embedded in {embed_s:.2f}s, "
            f"{emb['cacheHits']} from cache, {emb['pending']} pending"
            + (f" ({emb['error']})" if emb["error"] else "")
            + "\n"
        )
    out.write(f"index: {index_path}\n")
    for s in r["skipped"] + r["errors"]:
        out.write(f"skipped {s['path']}: {s['reason']}\n")
    return 0


def run_search(c: Call) -> int:
    cfg, args, out, err = c.config(), c.args, c.out, c.err
    params = _search_params(args)
    direct: list[bool] = []

    def from_the_file() -> None:  # no daemon answered: this process reads the index
        c.setup_logging()
        direct.append(True)

    result = read_call(cfg, "memory_search", params, direct=from_the_file)
    if direct and result.get("mode") in ("hybrid", "vector"):  # a model was loaded for it
        from indexer.surfaces.cli.autostart import autostart_wanted, start_daemon

        if autostart_wanted(args.no_daemon):
            start_daemon(cfg, c.global_args(), err)
    if args.mode in ("hybrid", "vector") and result.get("mode") != args.mode:
        err.write(
            f"memindex: warning: --mode {args.mode} could not be honoured: "
            f"{result.get('fallback') or 'no vectors'}\n"
        )
    if args.json:
        return c.json(result)
    if result.get("skipped"):
        out.write(f"Not searched ({result['skipped']}).\n")
        return 0
    if result.get("time"):
        read = ", ".join(
            f"{t['said']} = {t['from']}" + ("" if t["from"] == t["to"] else f" .. {t['to']}")
            for t in result["time"]
        )
        out.write(f"time: {read}\n\n")
    if args.explain and "explain" in result:
        settings = {k: v for k, v in result["explain"].items() if k != "stages"}
        out.write(f"ranked by: {_parts(settings)}\n")
        out.write(_stages(result["explain"].get("stages", [])) + "\n")
    if result.get("abstained"):
        out.write(f"No results: {result['abstained']}.\n")
        return 0
    if not result["results"]:
        out.write("No results.\n")
        return 0
    for r in result["results"]:
        _print_hit(r, out)
    return 0


def _search_params(args: argparse.Namespace) -> dict[str, object]:
    """The memory_search request the command line asks for."""
    params: dict[str, object] = {"query": args.query}
    if args.max_results is not None:
        params["maxResults"] = args.max_results
    if args.min_score is not None:
        params["minScore"] = args.min_score
    if args.source != "all":
        params["sources"] = [args.source]
    if args.gate:
        params["gate"] = True
    if args.mode is not None:
        params["mode"] = args.mode
    if args.explain:
        params["explain"] = True
    if args.abstain:
        params["abstain"] = True
    if args.as_of is not None:
        params["asOf"] = args.as_of
    if args.time_zone is not None:
        params["timeZone"] = args.time_zone
    return params


def _print_hit(r: Mapping[str, Any], out: TextIO) -> None:
    """One result: score and citation, the wider chunk, its other places, its parts,
    its snippet."""
    # the lines the snippet shows (what a citation points a reader at); the
    # chunk's range too when it is wider
    a, b = r.get("snippetStartLine", r["startLine"]), r.get("snippetEndLine", r["endLine"])
    where = f"{_shown(r['path'])}:{a}" + (f"-{b}" if b != a else "")
    if (a, b) != (r["startLine"], r["endLine"]):
        where += f"  (in lines {r['startLine']}-{r['endLine']})"
    out.write(f"{r['score']:.3f} {where}\n")
    for also in r.get("also", []):
        out.write(f"      also {_shown(also['citation'])}\n")
    if "explain" in r:
        out.write(f"      {_parts(r['explain'])}\n")
    for line in r["snippet"].split("\n"):
        out.write(f"    {line}\n")
    out.write("\n")


def _shown(path: str) -> str:
    """A path as text output shows it: a control character in a file name (a newline,
    an escape sequence) written as an escape, so a name cannot pass for more lines."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in path)


def _stages(trace: object) -> str:
    """The pipeline's trace: a line per stage that ran, what it moved below it."""
    lines = ["stages:"]
    for t in trace if isinstance(trace, list) else []:
        if not t.get("on", True):
            lines.append(f"  {t['stage']}: off")
            continue
        head = f"  {t['stage']}" + (f" ({t['ms']} ms)" if "ms" in t else "")
        if "found" in t:
            head += f": {t['found']} found"
        lines.append(head)
        for m in t.get("changed", []):
            was = f"{m['from']}" if "from" in m else "new"
            score = f"{m.get('before', '-')} -> {m['score']}"
            why = f"  ({m['why']})" if "why" in m else ""
            lines.append(f"      {m['citation']}: {was} -> {m['to']}, score {score}{why}")
        for m in t.get("dropped", []):
            lines.append(f"      {m['citation']}: {m['from']} -> dropped")
    return "\n".join(lines) + "\n"


def _parts(parts: dict[str, object]) -> str:
    """``explain`` parts on one line: ``bm25=3.1 cosine=0.52 ...``."""
    out = []
    for k, v in parts.items():
        if isinstance(v, dict):
            v = "{" + _parts(v) + "}"
        out.append(f"{k}={v}")
    return " ".join(out)


def run_get(c: Call) -> int:
    cfg, args, out, err = c.config(), c.args, c.out, c.err
    params: dict[str, object] = {"path": args.path}
    if args.start is not None:
        params["from"] = args.start
    if args.lines is not None:
        params["lines"] = args.lines
    if args.raw:
        params["raw"] = True
    result = read_call(cfg, "memory_get", params, direct=lambda: c.setup_logging())
    if args.json:
        return c.json(result)
    out.write(result["text"] + ("\n" if result["text"] else ""))
    first, total = result["from"], result["totalLines"]
    if first > max(total, 1):  # nothing printed: say why rather than exit quietly
        raise InvalidParams(f"--from {first} is past the end of {result['path']} ({total} lines)")
    if result.get("truncated"):
        more = result.get("nextFrom")
        err.write(
            f"memindex: output stopped at the size limit; go on with --from {more}\n"
            if more is not None
            else "memindex: the last line is cut at the size limit (limits.maxGetBytes)\n"
        )
    return 0
