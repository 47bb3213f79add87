// @ts-check
// memindex as OpenClaw's memory engine: the plugin entry.
//
// Owns OpenClaw's memory slot (plugins.slots.memory = "memindex") and registers the
// whole memory capability a slot owner gives, as memory-core does: the recall prompt,
// the pre-compaction flush plan (without it OpenClaw skips the flush), the runtime
// (managers behind memory search in OpenClaw's host surfaces), the public artifacts,
// and the deterministic recall tool; plus the agent's memory_search / memory_get tools
// and `openclaw memindex ...` (and `openclaw memory ...`). Searches are answered by
// the memindex daemon over its Unix socket. No dependencies beyond Node itself.
//
// Dreaming is memory-core's: OpenClaw loads memory-core beside the slot owner to run
// it (while plugins.entries.memindex.config.dreaming.enabled is not false), and
// memory-core's memory_search / memory_get then come first unless the tool policy
// denies memory-core's tools (tools.deny: ["memory-core"], which `memindex openclaw
// install` sets). The plugin says so at start when neither holds.
import { listArtifacts } from "./src/artifacts.js";
import { addMemoryCommands, dreamingOff, registerMemoryCli } from "./src/cli.js";
import { recordRecalls, warmUp } from "./src/dreaming.js";
import { memoryFlushPlan } from "./src/flush.js";
import { setHostLogger } from "./src/host.js";
import { registerIntents } from "./src/intents.js";
import { ManagerPool } from "./src/manager.js";
import { classifierState, classifyWorkspaceMemoryPaths } from "./src/provenance.js";
import { resolveSettings } from "./src/settings.js";
import { createGetTool, createSearchTool } from "./src/tools.js";
import { filterHits } from "./src/visibility.js";

/**
 * @import { MemoryPluginRuntime, MemoryPromptSectionParams, OpenClawConfig, PluginApi } from "./types/host.js"
 * @import { OnRecall } from "./src/tools.js"
 */

export const DREAMING_NOTICE =
  "memindex: OpenClaw's dreaming is on for the memory slot, so OpenClaw also loads" +
  " memory-core, whose memory_search / memory_get tools take precedence over memindex's" +
  " unless the tool policy denies memory-core's tools. Keep dreaming and hand the tools" +
  " to memindex: `memindex openclaw install` (it adds memory-core to tools.deny), or" +
  " switch dreaming off: openclaw config set plugins.entries.memindex.config.dreaming.enabled false";

/**
 * The "## Memory Recall" section of the system prompt, when the tools are there: the
 * guidance memory-core gives, sentence for sentence (the parity suite compares the
 * two prompts through the gateway), for the tools the turn has.
 * @param {MemoryPromptSectionParams} [params]
 * @returns {string[]}
 */
export function recallPrompt({ availableTools, citationsMode } = {}) {
  const has = (/** @type {string} */ name) => Boolean(availableTools?.has?.(name));
  const search = has("memory_search");
  const get = has("memory_get");
  if (!search && !get) return [];
  const lines = ["## Memory Recall"];
  const about = "Before answering anything about prior work, decisions, dates, people, preferences, or todos";
  if (search) {
    lines.push(
      `${about}: run memory_search` +
        (get ? "; for memory-file hits, use memory_get to pull only the needed lines" : "") +
        ". If low confidence after search, say you checked.",
    );
    if (has("sessions_search")) {
      lines.push(
        "For session hits, use sessions_search with distinctive snippet text (and sessionKey set to" +
          " the transcript ID when known)" +
          (has("sessions_history")
            ? ", then sessions_history with the returned sessionKey, messageId, and sessionId for a" +
              " bounded sanitized excerpt."
            : "; exact session history is unavailable with the enabled tools."),
      );
    } else if (has("sessions_history")) {
      lines.push(
        "For session hits, use sessions_history with a known session key or transcript ID and a" +
          " small limit; paginate its returned history metadata to locate the excerpt.",
      );
    } else {
      lines.push(
        "Session hits are search snippets only; exact session history is unavailable with the enabled tools.",
      );
    }
    lines.push(
      "Session search line numbers are not history offsets. Never read raw transcript files to expand session hits.",
    );
  } else {
    lines.push(
      `${about} that point to a specific memory file: run memory_get to pull only the needed lines.` +
        " If low confidence after reading, say you checked.",
    );
  }
  lines.push("Report partial, unavailable, or stale recall to the user, including returned warning and action guidance.");
  lines.push(
    citationsMode === "off"
      ? "Citations are disabled: do not mention file paths or line numbers in replies unless the user explicitly asks."
      : "Citations: include Source: <path#line> when it helps the user verify memory snippets.",
  );
  lines.push("");
  return lines;
}

/**
 * Whether memory-core's tools are denied by the tool policy (dreaming may stay on).
 * @param {OpenClawConfig | undefined} config
 */
function memoryCoreToolsDenied(config) {
  const deny = config?.tools?.deny;
  return Array.isArray(deny) && deny.includes("memory-core");
}

export default {
  id: "memindex",
  name: "memindex",
  description: "memindex as the memory engine: hybrid search over memory files and transcripts",
  /** @param {PluginApi} api */
  register(api) {
    setHostLogger(api.logger);
    const settings = resolveSettings(api.pluginConfig);
    // "yesterday" is the user's: OpenClaw's own zone setting (unset: the host's, as memindex's)
    const zone = api.config?.agents?.defaults?.userTimezone;
    if (typeof zone === "string" && zone.trim()) settings.userTimezone = zone.trim();
    const pool = new ManagerPool(settings);
    /** @type {MemoryPluginRuntime} */
    const runtime = {
      async getMemorySearchManager({ agentId, purpose }) {
        const started = Date.now();
        try {
          const manager = await pool.get(agentId);
          return { manager, debug: { backend: "builtin", purpose, managerMs: Date.now() - started } };
        } catch (err) {
          return { manager: null, error: `memindex: ${err.message}` };
        }
      },
      resolveMemoryBackendConfig() {
        return { backend: "builtin" };
      },
      // MEMORY.md and USER.md load at session start only when the slot owner
      // classifies their provenance (memory-core's rules: src/provenance.js)
      supportsWorkspaceMemoryReadSources: true,
      async classifyWorkspaceMemoryPaths(params) {
        const out = await classifyWorkspaceMemoryPaths(params);
        if (classifierState.problem && !classifierState.logged) {
          classifierState.logged = true;
          api.logger.warn(
            `memindex: memory file provenance cannot be read (${classifierState.problem});` +
              " MEMORY.md and USER.md are left out of automatic context until it can",
          );
        }
        return out;
      },
      // who may see a transcript hit: memory-core's rules (src/visibility.js)
      async authorizeSearchHits(params) {
        return filterHits(params);
      },
      async closeMemorySearchManager({ agentId }) {
        pool.close(agentId);
      },
      async closeAllMemorySearchManagers() {
        pool.close();
      },
    };
    api.registerMemoryCapability({
      runtime,
      promptBuilder: recallPrompt,
      // without a plan OpenClaw skips the pre-compaction memory flush
      flushPlanResolver: memoryFlushPlan,
      publicArtifacts: { listArtifacts },
      // memory_search is local and deterministic (no model in the loop)
      deterministicRecallToolName: "memory_search",
      // memory_search honours ctx.conversationRecall (src/visibility.js)
      supportsPrivateTranscriptRecall: true,
    });
    // OpenClaw's own modules memindex uses (dreaming's recall store, standing intents,
    // the wiki's supplements) load once, when the gateway starts, not on a request's
    // path: a module is evaluated on the gateway's one thread, and the first search
    // must not wait for it (nor any CLI process stay alive for their timers)
    api.on?.("gateway_start", () => {
      setImmediate(() => {
        warmUp({ dreaming: api.pluginConfig?.dreaming?.enabled !== false }).catch((err) =>
          api.logger.warn?.(`memindex: OpenClaw's own memory modules did not load: ${err?.message ?? err}`),
        );
      });
    });
    /** @type {OnRecall} */
    const onRecall = (ctx, query, hits, workspaceDir) =>
      recordRecalls({
        cfg: ctx.getRuntimeConfig?.() ?? ctx.runtimeConfig ?? ctx.config ?? api.config,
        pluginConfig: api.pluginConfig,
        workspaceDir,
        query,
        hits,
        logger: api.logger,
      });
    api.registerTool((ctx) => createSearchTool(ctx, pool, { onRecall }), { names: ["memory_search"] });
    api.registerTool((ctx) => createGetTool(ctx, pool), { names: ["memory_get"] });
    // OpenClaw runs dreaming through memory-core, loaded beside the slot owner while
    // the slot owner's dreaming.enabled is not false; memory-core then registers the
    // memory tools and `openclaw memory` first, and ours only log conflicts, unless
    // the tool policy drops memory-core's tools.
    const dreaming = api.pluginConfig?.dreaming?.enabled !== false;
    if (dreaming && !memoryCoreToolsDenied(api.config)) api.logger.warn(DREAMING_NOTICE);
    // standing intents: the tool (memory-core's is denied with its other tools, or
    // not loaded), and with dreaming off the matcher and sweep memory-core would run
    registerIntents(api, { withHooks: !dreaming });
    const describe = "Search, inspect and reindex memory (engine: memindex)";
    /**
     * @param {string} name
     * @param {string} [notice]
     */
    const cli = (name, notice) =>
      api.registerCli(
        ({ program, config }) => registerMemoryCli(program, { pool, config, name, notice, dreaming }),
        { descriptors: [{ name, description: describe, hasSubcommands: true }] },
      );
    cli("memindex", dreaming ? DREAMING_NOTICE : undefined);
    if (!dreaming) {
      cli("memory");
      // memory-core's gateway methods of dreaming are absent: each answers why
      for (const action of ["preview", "apply", "rollback"]) {
        const method = `memory.sessionBackfill.${action}`;
        api.registerGatewayMethod?.(
          method,
          ({ respond }) => respond(false, undefined, { code: "UNAVAILABLE", message: dreamingOff(method) }),
          { scope: action === "preview" ? "operator.read" : "operator.admin" },
        );
      }
    }
    else {
      // memory-core, loaded for dreaming, owns `openclaw memory`: its status, search,
      // index and reset would work on its own (empty) index; these four are memindex's
      const only = ["status", "search", "index", "reset"];
      api.registerCli(
        ({ program, config }) => addMemoryCommands(program, { pool, config, dreaming, only }),
        { parentPath: ["memory"], commands: only },
      );
    }
  },
};
