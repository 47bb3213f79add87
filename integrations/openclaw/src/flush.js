// @ts-check
// The pre-compaction memory flush plan. OpenClaw asks the memory-slot owner for it
// (capability.flushPlanResolver) before it compacts a session, and skips the flush,
// without a word, when the owner gives none: the agent would stop writing what it
// learnt to memory/YYYY-MM-DD.md. OpenClaw exports no builder a plugin may import, so
// this is memindex's own, giving the plan memory-core gives (OpenClaw 2026.9.6): the
// same target file, prompts, thresholds and agents.defaults.compaction.memoryFlush
// settings (enabled, model, softThresholdTokens, forceFlushTranscriptBytes).

/** @import { MemoryFlushPlan, MemoryFlushPlanParams, OpenClawConfig } from "../types/host.js" */

const SOFT_TOKENS = 4000;
const FORCE_BYTES = 2 * 1024 * 1024;
const RESERVE_FLOOR = 20000;

const TARGET = "Store durable memories only in memory/YYYY-MM-DD.md (create memory/ if needed).";
const APPEND =
  "If memory/YYYY-MM-DD.md already exists, APPEND new content only and do not overwrite existing entries.";
const READ_ONLY =
  "Treat workspace bootstrap/reference files such as MEMORY.md, DREAMS.md, SOUL.md, and AGENTS.md" +
  " as read-only during this flush; never overwrite, replace, or edit them.";
const PROMPT = [
  "Pre-compaction memory flush.",
  TARGET,
  READ_ONLY,
  APPEND,
  "Do NOT create timestamped variant files (e.g., YYYY-MM-DD-HHMM.md); always use the canonical YYYY-MM-DD.md filename.",
  "If nothing to store, reply with NO_REPLY.",
].join(" ");
const SYSTEM = [
  "Pre-compaction memory flush turn.",
  "The session is near auto-compaction; capture durable memories to disk.",
  TARGET,
  READ_ONLY,
  APPEND,
  "You may reply, but usually NO_REPLY is correct.",
].join(" ");

/** @param {unknown} value */
function nonNegInt(value) {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) return null;
  return Math.floor(value);
}

/** @type {Record<string, number>} */
const UNITS = { b: 1, k: 1024, kb: 1024, m: 1024 ** 2, mb: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, t: 1024 ** 4, tb: 1024 ** 4 };

/**
 * A byte size as OpenClaw's config takes it: a number, or "512kb", "2mb", "1.5g".
 * @param {unknown} value
 * @returns {number | null}
 */
export function byteSize(value) {
  if (typeof value === "number") {
    return Number.isSafeInteger(Math.floor(value)) && value >= 0 ? Math.floor(value) : null;
  }
  if (typeof value !== "string") return null;
  const m = /^(\d+(?:\.\d+)?)([a-z]+)?$/.exec(value.trim().toLowerCase());
  if (!m) return null;
  const unit = UNITS[m[2] ?? "b"];
  if (!unit) return null;
  const n = Math.round(Number(m[1]) * unit);
  return Number.isSafeInteger(n) ? n : null;
}

/** @param {OpenClawConfig | undefined} cfg */
function timezone(cfg) {
  const tz = cfg?.agents?.defaults?.userTimezone;
  if (typeof tz === "string" && tz.trim()) {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: tz.trim() }).format(0);
      return tz.trim();
    } catch {
      // not a zone Intl knows: the host's
    }
  }
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/**
 * @param {Date} date
 * @param {string} tz
 * @param {Intl.DateTimeFormatOptions} options
 */
function parts(date, tz, options) {
  /** @type {Partial<Record<Intl.DateTimeFormatPartTypes, string>>} */
  const out = {};
  for (const p of new Intl.DateTimeFormat("en-US", { timeZone: tz, ...options }).formatToParts(date))
    out[p.type] = p.value;
  return out;
}

/** @param {string | undefined} day */
function ordinal(day) {
  const n = Number(day);
  if (n % 100 >= 11 && n % 100 <= 13) return `${n}th`;
  return `${n}${(/** @type {Record<number, string>} */ ({ 1: "st", 2: "nd", 3: "rd" }))[n % 10] ?? "th"}`;
}

/**
 * The day (YYYY-MM-DD) and a readable "Current time" line in the user's zone.
 * @param {number} nowMs
 * @param {string} tz
 */
function clock(nowMs, tz) {
  const date = new Date(nowMs);
  const d = parts(date, tz, { year: "numeric", month: "2-digit", day: "2-digit" });
  const day = d.year && d.month && d.day ? `${d.year}-${d.month}-${d.day}` : date.toISOString().slice(0, 10);
  const h12 = new Intl.DateTimeFormat("en-US", { hour: "numeric" }).resolvedOptions().hour12 !== false;
  const w = parts(date, tz, {
    weekday: "long",
    month: "long",
    day: "numeric",
    year: "numeric",
    hour: "numeric",
    minute: "2-digit",
    hour12: h12,
  });
  const time = h12 ? `${w.hour}:${w.minute} ${w.dayPeriod}` : `${/** @type {string} */ (w.hour).padStart(2, "0")}:${w.minute}`;
  const when = `${w.weekday}, ${w.month} ${ordinal(w.day)}, ${w.year} - ${time}`;
  const utc = date.toISOString().replace("T", " ").slice(0, 16);
  return { day, line: `Current time: ${when} (${tz})\nReference UTC: ${utc} UTC` };
}

/**
 * OpenClaw's MemoryFlushPlanResolver: ({cfg, nowMs, contextWindowTokens}) => plan or
 * null (the flush is off: agents.defaults.compaction.memoryFlush.enabled = false).
 * @param {MemoryFlushPlanParams} [params]
 * @returns {MemoryFlushPlan | null}
 */
export function memoryFlushPlan({ cfg, nowMs, contextWindowTokens } = {}) {
  const settings = cfg?.agents?.defaults?.compaction?.memoryFlush;
  if (settings?.enabled === false) return null;
  const now = typeof nowMs === "number" && Number.isFinite(nowMs) ? nowMs : Date.now();
  let soft = nonNegInt(settings?.softThresholdTokens) ?? SOFT_TOKENS;
  const force = byteSize(settings?.forceFlushTranscriptBytes) ?? FORCE_BYTES;
  let reserve = RESERVE_FLOOR;
  const window = nonNegInt(contextWindowTokens);
  if (window !== null && window > 0) {
    reserve = Math.min(RESERVE_FLOOR, Math.floor(Math.max(1, window) * 0.25));
    soft = Math.min(soft, Math.floor((window - reserve) / 2));
  }
  const { day, line } = clock(now, timezone(cfg));
  const model = typeof settings?.model === "string" && settings.model.trim() ? settings.model.trim() : undefined;
  return {
    softThresholdTokens: soft,
    forceFlushTranscriptBytes: force,
    reserveTokensFloor: reserve,
    ...(model ? { model } : {}),
    prompt: `${PROMPT.replaceAll("YYYY-MM-DD", day).trimEnd()}\n${line}`,
    systemPrompt: SYSTEM.replaceAll("YYYY-MM-DD", day),
    relativePath: `memory/${day}.md`,
  };
}
