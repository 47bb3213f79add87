// Parts of memory-core that OpenClaw's SDK does not export, used only on the exact
// OpenClaw release they were tested against (tests/openclaw/test_openclaw_parity.py):
//
// * dreaming's recall signals: memory-core's memory_search records each recall in
//   its short-term recall store (`recordShortTermRecalls`), and the nightly
//   promotion into MEMORY.md ranks by them; with memindex answering the searches
//   the store stayed empty (OpenClaw 2026.9.6 has no supported way for another
//   plugin to feed it: no SDK export, and its memory host events are not read as
//   signals);
// * standing intents: the `intent` tool and the matcher that injects an armed
//   intent (memory-core registers both; denying memory-core's tools denies
//   `intent` too, and with dreaming off memory-core is not loaded at all).
//
// Each is a module of the installed OpenClaw, found beside its SDK and loaded only
// when the package's version is one listed here; on any other version nothing is
// loaded and `openclaw memindex status` says so (features.json rows).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { importHostSdk, resolveHostSdk } from "./host.js";

export const TESTED = {
  "2026.9.6": {
    recall: "short-term-promotion-record-DC24HXjB.mjs",
    intents: "standing-intents-DCNg_exD.mjs",
    intentTool: "standing-intents-tool-Cl5KQktW.mjs",
    dreamingState: "dreaming-state-GgIReYWB.mjs",
  },
};

let found = null;

/**
 * A module of the host's own package, by its file. Imported from memindex's code
 * directly, OpenClaw 2026.9 takes a file outside the plugin for a dependency of the
 * plugin and copies the host's whole package into the plugin's generation artifact
 * first, on the gateway's thread (16-21 s here, during which the gateway answers
 * nothing). A module made of one re-export is not the plugin's code: the host's file
 * loads as the host loads it, the same module instance, in milliseconds.
 */
function importHostFile(file) {
  const url = pathToFileURL(file).href;
  return import(`data:text/javascript,export * from ${JSON.stringify(url)};`);
}

/** { version, modules, problem } of the running OpenClaw. */
export async function openclawInternals() {
  if (found) return found;
  const { mod, problem } = await importHostSdk("memory-host-core");
  if (!mod) return (found = { version: null, modules: null, problem });
  // the SDK module's file: <package>/dist/plugin-sdk/memory-host-core.js
  const resolved = resolveHostSdk("memory-host-core");
  if (!resolved) return (found = { version: null, modules: null, problem: "no OpenClaw SDK found" });
  const root = path.resolve(path.dirname(fileURLToPath(resolved)), "..", "..");
  let version = null;
  try {
    version = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version ?? null;
  } catch {
    version = null;
  }
  const names = TESTED[version];
  if (!names) {
    return (found = {
      version,
      modules: null,
      problem: `OpenClaw ${version ?? "?"} is not one memindex was tested with (${Object.keys(TESTED).join(", ")})`,
    });
  }
  const modules = {};
  for (const [key, file] of Object.entries(names)) {
    try {
      modules[key] = await importHostFile(path.join(root, "dist", file));
    } catch (err) {
      return (found = { version, modules: null, problem: `${file}: ${err?.message ?? err}` });
    }
  }
  return (found = { version, modules, problem: null });
}

/**
 * Load what memindex uses of the host once, ahead of any request (the gateway's
 * start): the tested internals, the dreaming state store (``dreaming``), the SDK
 * module of the wiki's corpus supplements. Resolves when all are loaded.
 */
export async function warmUp({ dreaming }) {
  const [{ modules }] = await Promise.all([
    openclawInternals(),
    importHostSdk("memory-core-host-runtime-core"),
  ]);
  if (dreaming && modules) await dreamingStateReady(modules);
  warmUp.done = true;
}

/** For tests. */
export function resetInternals() {
  found = null;
}

/**
 * memory-core keeps dreaming's state in its plugin-state rows; loaded only beside
 * the slot owner, it does not open that store in the gateway, so memindex opens it
 * the way memory-core does (the same rows: plugin id memory-core), once.
 */
async function dreamingStateReady(modules) {
  const state = modules?.dreamingState;
  if (!state) return false;
  try {
    state.openMemoryCoreStateStore({ namespace: "short-term-meta", maxEntries: 50_000 });
    return true;
  } catch (err) {
    if (!/not configured/.test(String(err?.message ?? err))) throw err;
  }
  const { mod } = await importHostSdk("plugin-state-store-runtime");
  if (typeof mod?.createPluginStateKeyedStore !== "function") return false;
  state.configureMemoryCoreDreamingState((options) => mod.createPluginStateKeyedStore("memory-core", options));
  return true;
}

/**
 * Record the memory hits the model was shown where memory-core records its own, when
 * dreaming is on (what dreaming's promotion ranks by): all of them, as memory-core
 * passes them; its recorder keeps the daily notes' and journals the rest as skipped
 * (memory.recall.recorded / memory.recall.skipped). Never throws.
 */
export async function recordRecalls({ cfg, pluginConfig, workspaceDir, query, hits, logger }) {
  if (pluginConfig?.dreaming?.enabled === false || !workspaceDir) return false;
  const results = (hits ?? []).filter((h) => h && typeof h.path === "string");
  if (!results.length) return false;
  const { modules, problem } = await openclawInternals();
  const record = modules?.recall?.recordShortTermRecalls;
  if (typeof record !== "function") {
    if (problem && !recordRecalls.warned) {
      recordRecalls.warned = true;
      logger?.warn?.(`memindex: dreaming is not fed with memindex's recalls: ${problem}`);
    }
    return false;
  }
  if (!(await dreamingStateReady(modules))) return false;
  const timezone =
    pluginConfig?.dreaming?.timezone || cfg?.agents?.defaults?.userTimezone || undefined;
  try {
    await record({ workspaceDir, query, results, nowMs: Date.now(), ...(timezone ? { timezone } : {}) });
    return true;
  } catch (err) {
    if (!recordRecalls.failed) {
      recordRecalls.failed = true;
      logger?.warn?.(`memindex: dreaming's recall store could not be fed: ${err?.message ?? err}`);
    }
    return false;
  }
}
