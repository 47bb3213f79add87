// memindex as OpenClaw's memory engine: the plugin entry.
//
// Owns OpenClaw's memory slot (plugins.slots.memory = "memindex"): registers the
// memory runtime (managers behind memory search in OpenClaw's host surfaces), the
// agent's memory_search / memory_get tools and `openclaw memory ...`, all answered by
// the memindex daemon over its Unix socket. No dependencies beyond Node itself.
import { authorizeHits } from "./src/agents.js";
import { registerMemoryCli } from "./src/cli.js";
import { ManagerPool } from "./src/manager.js";
import { resolveSettings } from "./src/settings.js";
import { createGetTool, createSearchTool } from "./src/tools.js";

export const DREAMING_NOTICE =
  "memindex: OpenClaw's dreaming is on for the memory slot, so OpenClaw also loads" +
  " memory-core, whose memory_search / memory_get tools and `openclaw memory` command" +
  " take precedence over memindex's. memindex does no dreaming; to hand the agent's" +
  " memory tools to memindex run: openclaw config set" +
  " plugins.entries.memindex.config.dreaming.enabled false";

const PROMPT = [
  "## Memory Recall",
  "Before answering anything about prior work, decisions, dates, people, preferences or" +
    " todos: run memory_search, then memory_get to read only the cited lines. If nothing" +
    " relevant comes back, say you checked.",
  "",
];

export default {
  id: "memindex",
  name: "memindex",
  description: "memindex as the memory engine: hybrid search over memory files and transcripts",
  register(api) {
    const settings = resolveSettings(api.pluginConfig);
    const pool = new ManagerPool(settings);
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
      async authorizeSearchHits(params) {
        return authorizeHits(params);
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
      deterministicRecallToolName: "memory_search",
      promptBuilder: ({ availableTools }) => (availableTools?.has?.("memory_search") ? PROMPT : []),
    });
    api.registerTool((ctx) => createSearchTool(ctx, pool), { names: ["memory_search"] });
    api.registerTool((ctx) => createGetTool(ctx, pool), { names: ["memory_get"] });
    // OpenClaw runs dreaming through memory-core, loaded beside the slot owner while
    // the slot owner's dreaming.enabled is not false; memory-core then registers the
    // memory tools and `openclaw memory` first, and ours would only log conflicts.
    const dreaming = api.pluginConfig?.dreaming?.enabled !== false;
    if (dreaming) api.logger.warn(DREAMING_NOTICE);
    const describe = "Search, inspect and reindex memory (engine: memindex)";
    const cli = (name, notice) =>
      api.registerCli(
        ({ program, config }) => registerMemoryCli(program, { pool, config, name, notice }),
        { descriptors: [{ name, description: describe, hasSubcommands: true }] },
      );
    cli("memindex", dreaming ? DREAMING_NOTICE : undefined);
    if (!dreaming) cli("memory");
  },
};
