// @ts-check
// Compares memindex's pre-compaction flush plan with memory-core's own, for a table of
// settings, times and zones: node scripts/flush-parity.mjs <openclaw>/dist/extensions/memory-core/index.js
// memory-core is loaded with a stand-in plugin API that keeps only its capability.
// Prints "N/N equal" (and each difference); tests/test_openclaw_plugin.py runs it.
import { memoryFlushPlan } from "../src/flush.js";

/** @import { MemoryFlushPlanParams, MemoryPluginCapability } from "../types/host.js" */

const mod = await import(process.argv[2]);
/** @type {MemoryPluginCapability | undefined} */
let capability;
const noop = () => {};
const inert = new Proxy(noop, { get: () => inert, apply: () => undefined });
const api = new Proxy(
  {},
  {
    get(_t, key) {
      if (key === "registerMemoryCapability") return (/** @type {MemoryPluginCapability} */ c) => (capability = c);
      if (key === "logger") return { info: noop, warn: noop, error: noop, debug: noop };
      if (key === "config" || key === "pluginConfig") return {};
      if (key === "runtime") return inert;
      return noop;
    },
  },
);
mod.default.register(api);

const t = Date.UTC(2026, 10, 21, 14, 5, 0);
const zone = (/** @type {string} */ tz) => ({ agents: { defaults: { userTimezone: tz } } });
const flush = (/** @type {Record<string, unknown>} */ m) => ({ agents: { defaults: { compaction: { memoryFlush: m } } } });
/** @type {MemoryFlushPlanParams[]} */
const cases = [
  { nowMs: t },
  { nowMs: t, cfg: zone("Europe/Berlin") },
  { nowMs: t, contextWindowTokens: 32000, cfg: zone("Asia/Tokyo") },
  { nowMs: Date.UTC(2026, 0, 1, 23, 30), contextWindowTokens: 16000, cfg: zone("America/Los_Angeles") },
  { nowMs: t, cfg: zone("Not/A_Zone") },
  { cfg: flush({ enabled: false }) },
  { nowMs: t, contextWindowTokens: 128000, cfg: flush({ softThresholdTokens: 9000, forceFlushTranscriptBytes: "1mb", model: " a/b " }) },
  { nowMs: t, cfg: flush({ softThresholdTokens: -3, forceFlushTranscriptBytes: "12 parsecs" }) },
  { nowMs: t, contextWindowTokens: 4000, cfg: flush({ forceFlushTranscriptBytes: 0 }) },
];
const core = capability;
if (!core?.flushPlanResolver) throw new Error(`${process.argv[2]} registered no memory flush plan resolver`);
let same = 0;
for (const c of cases) {
  const theirs = JSON.stringify(core.flushPlanResolver(c));
  const ours = JSON.stringify(memoryFlushPlan(c));
  if (theirs === ours) same++;
  else console.log("differs:", JSON.stringify(c), "\n core:", theirs, "\n ours:", ours);
}
console.log(`${same}/${cases.length} equal`);
