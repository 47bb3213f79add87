// @ts-check
// Dreaming's recall signals with memindex answering the searches: the memory hits the
// model is shown are recorded in memory-core's short-term recall store, which the
// nightly promotion into MEMORY.md ranks by (memory-core's own recorder, from
// src/host.js: loaded only on an OpenClaw release memindex was checked against).
import { importHostSdk, openclawInternals } from "./host.js";

/** @import { HostInternals, MemorySearchResult, OpenClawConfig, PluginConfig, PluginLogger } from "../types/host.js" */

/**
 * Load what memindex uses of the host once, ahead of any request (the gateway's
 * start): the checked internals, the dreaming state store (``dreaming``), the SDK
 * module of the wiki's corpus supplements. Resolves when all are loaded.
 * @param {{ dreaming: boolean }} opts
 */
export async function warmUp({ dreaming }) {
  const [{ modules }] = await Promise.all([
    openclawInternals(),
    importHostSdk("memory-core-host-runtime-core"),
  ]);
  if (dreaming && modules) await dreamingStateReady(modules);
}

/**
 * memory-core keeps dreaming's state in its plugin-state rows; loaded only beside
 * the slot owner, it does not open that store in the gateway, so memindex opens it
 * the way memory-core does (the same rows: plugin id memory-core), once.
 * @param {HostInternals | null} modules
 */
async function dreamingStateReady(modules) {
  const state = modules?.dreamingState;
  if (!state) return false;
  try {
    state.openMemoryCoreStateStore({ namespace: "short-term-meta", maxEntries: 50_000 });
    return true;
  } catch (err) {
    if (!/not configured/.test(String(err instanceof Error ? err.message : err))) throw err;
  }
  const { mod } = await importHostSdk("plugin-state-store-runtime", ["createPluginStateKeyedStore"]);
  if (!mod) return false;
  state.configureMemoryCoreDreamingState((options) => mod.createPluginStateKeyedStore("memory-core", options));
  return true;
}

const said = { warned: false, failed: false };

/**
 * Record the memory hits the model was shown where memory-core records its own, when
 * dreaming is on (what dreaming's promotion ranks by): all of them, as memory-core
 * passes them; its recorder keeps the daily notes' and journals the rest as skipped
 * (memory.recall.recorded / memory.recall.skipped). Never throws.
 * @param {{
 *   cfg?: OpenClawConfig,
 *   pluginConfig?: PluginConfig,
 *   workspaceDir?: string,
 *   query: string,
 *   hits: MemorySearchResult[] | undefined,
 *   logger?: PluginLogger,
 * }} params
 */
export async function recordRecalls({ cfg, pluginConfig, workspaceDir, query, hits, logger }) {
  if (pluginConfig?.dreaming?.enabled === false || !workspaceDir) return false;
  const results = (hits ?? []).filter((h) => h && typeof h.path === "string");
  if (!results.length) return false;
  try {
    const { modules, problem } = await openclawInternals();
    if (!modules) {
      if (problem && !said.warned) {
        said.warned = true;
        logger?.warn?.(`memindex: dreaming is not fed with memindex's recalls: ${problem}`);
      }
      return false;
    }
    if (!(await dreamingStateReady(modules))) return false;
    const timezone =
      pluginConfig?.dreaming?.timezone || cfg?.agents?.defaults?.userTimezone || undefined;
    await modules.recall.recordShortTermRecalls({
      workspaceDir,
      query,
      results,
      nowMs: Date.now(),
      ...(timezone ? { timezone } : {}),
    });
    return true;
  } catch (err) {
    if (!said.failed) {
      said.failed = true;
      logger?.warn?.(
        `memindex: dreaming's recall store could not be fed: ${err instanceof Error ? err.message : err}`,
      );
    }
    return false;
  }
}
