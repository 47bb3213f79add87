// @ts-check
// `openclaw memory status|search|index|get|forget|audit` when memindex owns the memory slot.
import { authorizeHits, configuredAgents } from "./agents.js";
import { openclawStateDir } from "./daemon.js";
import { featureLines, features } from "./features.js";
import { forgetSessions } from "./forget.js";

/**
 * @import { CliCommand, MemorySearchResult, OpenClawConfig } from "../types/host.js"
 * @import { ForgetReport } from "./forget.js"
 * @import { OpenClawStatus as Status } from "./answers.js"
 * @import { ManagerPool } from "./manager.js"
 * @typedef {{ agentId: string, status?: Status, error?: string }} StatusRow
 * @typedef {{ agentId: string, result?: any, error?: string }} IndexRow
 * @typedef {{ pool: ManagerPool, config: OpenClawConfig, notice?: string, dreaming?: boolean, only?: string[] }} CliOptions
 */

/**
 * @template T
 * @param {boolean | undefined} json
 * @param {T} value
 * @param {(value: T) => string} human
 */
function print(json, value, human) {
  process.stdout.write(json ? JSON.stringify(value, null, 2) + "\n" : human(value));
}

/**
 * @param {boolean | undefined} json
 * @param {Error} err
 * @param {string} agentId
 */
function fail(json, err, agentId) {
  const message = `memindex: ${err.message}`;
  if (json) {
    process.stdout.write(
      JSON.stringify({ ok: false, error: { type: "cli_error", message }, agentId }) + "\n",
    );
  } else {
    process.stderr.write(message + "\n");
  }
  process.exitCode = 1;
}

/** @param {string} question */
async function confirm(question) {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    process.stderr.write("memindex: memory reset needs confirmation; re-run with --yes when not at a terminal\n");
    process.exitCode = 1;
    return false;
  }
  const { createInterface } = await import("node:readline/promises");
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    if (/^y(es)?$/i.test(answer.trim())) return true;
    process.stdout.write("Memory reset cancelled.\n");
    return false;
  } finally {
    rl.close();
  }
}

/**
 * @param {unknown} value
 * @param {string} name
 */
function int(value, name) {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
}

/** @param {StatusRow[]} rows */
function humanStatus(rows) {
  const lines = [];
  for (const { agentId, status: s, error } of rows) {
    lines.push(`Memory engine: memindex${s?.custom?.version ? ` ${s.custom.version}` : ""}`);
    lines.push(`Agent: ${agentId}`);
    if (error) {
      lines.push(`Error: ${error}`, "");
      continue;
    }
    if (!s) continue;
    const counts = (s.sourceCounts ?? []).map((c) => `${c.source} ${c.files}/${c.chunks}`);
    lines.push(
      `Workspace: ${s.workspaceDir ?? "-"}`,
      `Index: ${s.dbPath}`,
      `Provider: ${s.provider}${s.model ? ` (${s.model})` : ""}, search mode ${s.custom.mode}`,
      `Files: ${s.files} · Chunks: ${s.chunks}${counts.length ? ` (${counts.join(", ")})` : ""}`,
      `Vector: ${s.vector.enabled ? "on" : "off"} (${s.vector.index.state})`,
      `Dirty: ${s.dirty ? "yes" : "no"}${s.custom.stuck ? " · STUCK: see memindex status" : ""}`,
      ...(s.lastSyncError ? [`Last error: ${s.lastSyncError}`] : []),
      `Socket: ${s.custom.socket}`,
      "",
    );
  }
  return lines.join("\n");
}

/** @param {{ results: MemorySearchResult[], engine: string, provider?: string, model?: string, mode?: string }} res */
function humanHits(res) {
  if (!res.results.length) return "No matches.\n";
  return (
    res.results
      .map((h) => `${h.score.toFixed(3)} ${h.citation}\n${h.snippet.replace(/^/gm, "  ")}`)
      .join("\n\n") + "\n"
  );
}

const AUDIT_KINDS = ["bootstrap", "stale", "duplicates", "conflicts", "unfindable", "secrets"];

/**
 * memindex's audit as a short report: counts, then each finding and what to do.
 * @param {{
 *   counts: Record<string, number>,
 *   checked: { files: number },
 *   findings: Array<{ kind: string, path: string, startLine: number, endLine: number, message: string, suggestion: string }>,
 * }} r
 */
export function humanAudit(r) {
  const counts = Object.entries(r.counts).map(([k, n]) => `${k} ${n}`).join(", ");
  const total = Object.values(r.counts).reduce((a, b) => a + b, 0);
  const lines = [`Memory audit: ${total} finding(s) in ${r.checked.files} files (${counts})`];
  for (const f of r.findings) {
    const span = f.endLine !== f.startLine ? `${f.startLine}-${f.endLine}` : `${f.startLine}`;
    lines.push(`[${f.kind}] ${f.path}:${span}  ${f.message}`, `    -> ${f.suggestion}`);
  }
  return lines.join("\n") + "\n";
}

/** @param {ForgetReport} r */
function humanForget(r) {
  const verb = r.dryRun ? "Would forget" : "Forgot";
  const rows = r.sessionResolutions.map(
    (s) => `  ${s.sessionId}${s.sessionKey ? ` (${s.sessionKey})` : ""} [${s.source}]`,
  );
  const after = r.dryRun ? "" : r.reindexed ? "memindex dropped them from its index.\n" : "";
  return `${verb} ${r.sessionIds.length} session(s) of agent ${r.agentId}:\n${rows.join("\n")}\n${after}`;
}

/**
 * `<agent>: <what>: N files (M chunks written)`, or the agent's error.
 * @param {IndexRow} r
 * @param {string} what
 */
function indexedLine(r, what) {
  if (r.error) return `${r.agentId}: ${r.error}\n`;
  const x = r.result ?? {};
  const files = Number.isInteger(x.files) ? `${x.files} files` : "";
  const written = Number.isInteger(x.chunksWritten) ? ` (${x.chunksWritten} chunks written)` : "";
  return `${r.agentId}: ${what}${files ? `: ${files}${written}` : ""}\n`;
}

// `openclaw memory` commands of memory-core's dreaming (absent when memindex runs
// without dreaming: memory-core is not loaded then)
export const DREAMING_COMMANDS = ["promote", "promote-explain", "rem-harness", "rem-backfill", "session-backfill"];

/**
 * Why a dreaming command or method is not there, in one line.
 * @param {string} what
 */
export function dreamingOff(what) {
  return (
    `${what} is dreaming's (OpenClaw's memory-core), which is off: memindex was installed with` +
    " --no-dreaming. To have it: memindex openclaw install (dreaming on), then openclaw gateway restart"
  );
}

/**
 * @param {CliCommand} program
 * @param {CliOptions & { name?: string }} opts
 */
export function registerMemoryCli(program, opts) {
  const mem = program
    .command(opts.name ?? "memory")
    .description("Search, inspect and reindex memory (engine: memindex)");
  addMemoryCommands(mem, opts);
}

/**
 * The subcommands on ``mem`` (``only``: these alone, e.g. status/search/index put
 * in place of memory-core's under `openclaw memory` when dreaming keeps memory-core
 * loaded: those report on the index the agent searches, which is memindex's).
 * @param {CliCommand} mem
 * @param {CliOptions} opts
 */
export function addMemoryCommands(mem, { pool, config, notice, dreaming = true, only }) {
  const agents = () => configuredAgents(config);
  const want = (/** @type {string} */ name) => !only || only.includes(name);

  if (want("status"))
  mem
    .command("status")
    .description("Show memindex's index for each agent")
    .option("--agent <id>", "one agent (default: every configured agent)")
    .option("--json", "print JSON")
    .option("--deep", "accepted for compatibility; memindex status is always complete")
    .option("--index", "reindex first when the index is dirty")
    .action(async (opts) => {
      /** @type {StatusRow[]} */
      const rows = [];
      let failed = false;
      for (const agentId of opts.agent ? [opts.agent] : agents()) {
        try {
          const m = await pool.get(agentId);
          await m.refresh();
          if (opts.index && m.status().dirty) await m.sync({ reason: "cli" });
          rows.push({ agentId, status: /** @type {Status} */ (m.status()) }); // refreshed: the daemon's
        } catch (err) {
          failed = true;
          rows.push({ agentId, error: `memindex: ${err.message}` });
        }
      }
      const served = features({ dreaming });
      for (const row of rows) if (row.status?.custom) Object.assign(row.status.custom, { features: served });
      print(opts.json, rows, (r) => `${humanStatus(r)}${featureLines(served).join("\n")}\n`);
      if (notice && !opts.json) process.stderr.write(`${notice}\n`);
      if (failed) process.exitCode = 1;
    });

  if (want("search"))
  mem
    .command("search")
    .description("Search memory with memindex")
    .argument("<query>", "words, quoted phrases, IDs")
    .option("--agent <id>", "agent (default: the default agent)")
    .option("--max-results <n>", "number of results")
    .option("--min-score <x>", "drop weaker results (0..1)")
    .option("--source <source>", "memory | sessions | all", "all")
    .option("--json", "print JSON")
    .action(async (query, opts) => {
      const agentId = opts.agent ?? agents()[0];
      try {
        /** @type {Record<string, unknown>} */
        const req = {};
        const n = int(opts.maxResults, "--max-results");
        if (n) req.maxResults = n;
        if (opts.minScore !== undefined) req.minScore = Number(opts.minScore);
        if (opts.source === "memory" || opts.source === "sessions") req.sources = [opts.source];
        else if (opts.source !== "all") throw new Error("--source must be memory, sessions or all");
        const m = await pool.get(agentId);
        const res = await m.searchFull(query, req);
        // The CLI is the operator acting for this agent: its own transcripts are shown.
        const results = authorizeHits({ agentId, sandboxed: false, hits: res.results });
        print(
          opts.json,
          { results, engine: "memindex", provider: res.provider, model: res.model, mode: res.mode },
          humanHits,
        );
      } catch (err) {
        fail(opts.json, err, agentId);
      }
    });

  if (want("index"))
  mem
    .command("index")
    .description("Index new and changed files now (memindex reindex)")
    .option("--agent <id>", "one agent (default: every configured agent)")
    .option("--force", "rebuild the whole index")
    .option("--json", "print JSON")
    .action(async (opts) => {
      /** @type {IndexRow[]} */
      const out = [];
      for (const agentId of opts.agent ? [opts.agent] : agents()) {
        try {
          const m = await pool.get(agentId);
          out.push({ agentId, result: await m.sync({ force: Boolean(opts.force), reason: "cli" }) });
        } catch (err) {
          out.push({ agentId, error: `memindex: ${err.message}` });
          process.exitCode = 1;
        }
      }
      print(opts.json, out, (rows) => rows.map((r) => indexedLine(r, "indexed")).join(""));
    });

  if (want("reset"))
  mem
    .command("reset")
    .description(
      "Reset the memory index the agent searches: memindex builds it again from the files " +
        "(sessions, memory files and the embedding cache are kept)",
    )
    .option("--agent <id>", "one agent (default: every configured agent)")
    .option("--yes", "skip the confirmation", false)
    .option("--json", "print JSON")
    .action(async (opts) => {
      const ids = opts.agent ? [opts.agent] : agents();
      // memory-core's rule: a reset is confirmed, and without a terminal only by --yes
      if (!opts.yes && !(await confirm(`Reset the memory index for ${ids.join(", ")}? Files and sessions are kept.`))) {
        return;
      }
      /** @type {IndexRow[]} */
      const out = [];
      for (const agentId of ids) {
        try {
          const m = await pool.get(agentId);
          out.push({ agentId, result: await m.sync({ force: true, reason: "reset" }) });
        } catch (err) {
          out.push({ agentId, error: `memindex: ${err.message}` });
          process.exitCode = 1;
        }
      }
      print(opts.json, out, (rows) => rows.map((r) => indexedLine(r, "index reset and built again")).join(""));
    });

  // memory-core's dreaming commands: theirs with dreaming on; without it, say so
  if (!dreaming && !only) {
    for (const name of DREAMING_COMMANDS) {
      mem
        .command(name)
        .description(`Dreaming's ${name} (memory-core's; dreaming is off with memindex)`)
        .allowUnknownOption(true)
        .allowExcessArguments(true)
        .action(() => {
          process.stderr.write(`${dreamingOff(`openclaw memory ${name}`)}\n`);
          process.exitCode = 1;
        });
    }
  }

  if (want("forget"))
  mem
    .command("forget")
    .description("Forget sessions: never index them again, and drop them from the index")
    .option("--agent <id>", "agent (default: the default agent)")
    .option("--session <id-or-key>", "a session id or key (repeatable)", (/** @type {string} */ v, /** @type {string[]} */ acc) => [...acc, v], [])
    .option("--dry-run", "show what would be forgotten")
    .option("--json", "print JSON")
    .action(async (opts) => {
      const agentId = opts.agent ?? agents()[0];
      try {
        const report = await forgetSessions({
          stateDir: openclawStateDir(),
          agentId,
          selectors: opts.session,
          dryRun: Boolean(opts.dryRun),
        });
        if (!opts.dryRun) {
          // the daemon reads the records at its next sync: now, so the answer is true
          const m = await pool.get(agentId);
          await m.sync({ reason: "forget" });
          report.reindexed = true;
        }
        print(opts.json, report, humanForget);
      } catch (err) {
        fail(opts.json, err, agentId);
      }
    });

  if (want("audit"))
  mem
    .command("audit")
    .description("What is wrong with the memory: past the bootstrap cap, stale, duplicated, unfindable, secrets")
    .option("--agent <id>", "agent (default: the default agent)")
    .option("--kind <kind...>", `only these kinds: ${AUDIT_KINDS.join(", ")}`)
    .option("--json", "print JSON")
    .action(async (opts) => {
      const agentId = opts.agent ?? agents()[0];
      try {
        const kinds = opts.kind ?? [];
        const bad = kinds.filter((/** @type {string} */ k) => !AUDIT_KINDS.includes(k));
        if (bad.length) throw new Error(`--kind must be among ${AUDIT_KINDS.join(", ")}`);
        const m = await pool.get(agentId);
        print(opts.json, await m.audit(kinds), humanAudit);
      } catch (err) {
        fail(opts.json, err, agentId);
      }
    });

  if (want("get"))
  mem
    .command("get")
    .description("Print lines of a memory file")
    .argument("<path>", "path as cited by search, e.g. memory/2026-11-21.md")
    .option("--agent <id>", "agent (default: the default agent)")
    .option("--from <n>", "first line (1-based)")
    .option("--lines <n>", "number of lines")
    .option("--json", "print JSON")
    .action(async (relPath, opts) => {
      const agentId = opts.agent ?? agents()[0];
      try {
        const m = await pool.get(agentId);
        const r = await m.readFile({
          relPath,
          from: int(opts.from, "--from"),
          lines: int(opts.lines, "--lines"),
        });
        print(opts.json, r, (v) => (v.status === "ok" ? v.text : `not found: ${v.path}\n`));
        if (r.status !== "ok") process.exitCode = 1;
      } catch (err) {
        fail(opts.json, err, agentId);
      }
    });
}
