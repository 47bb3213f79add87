// @ts-check
// The corpora memory_search and memory_get answer from besides memindex's own: the
// wiki (OpenClaw's memory corpus supplements, registered by memory-wiki and other
// plugins), as memory-core's tools answer it: `corpus=wiki` searches the supplements
// only, `corpus=all` both, each capped at half the results when both have some.
// And how a result is presented to the model: its corpus, and its citation when
// citations are on (memory.citations: on, off, or auto: direct chats only).
import { importHostSdk } from "./host.js";

/**
 * @import { MemoryCitationsMode, MemoryCorpusSupplement, MemorySearchResult, OpenClawConfig } from "../types/host.js"
 * @typedef {{ corpus: string, outcome: string, error?: string }} Attempt what one corpus answered
 */

/** The registered memory corpus supplements, or null when the host has none to give. */
async function supplements() {
  const { mod } = await importHostSdk("memory-core-host-runtime-core");
  const list = mod?.listMemoryCorpusSupplements;
  if (typeof list !== "function") return null;
  return [...list()].sort((a, b) => String(a.pluginId).localeCompare(String(b.pluginId)));
}

/**
 * Each supplement's answer (four at a time), failures named by plugin.
 * @template T
 * @param {(supplement: MemoryCorpusSupplement) => Promise<T>} run
 * @returns {Promise<Attempt & { values: T[] }>}
 */
async function settle(run) {
  const all = await supplements();
  if (!all?.length) return { corpus: "wiki", outcome: "not-registered", values: [] };
  /** @type {T[]} */
  const values = [];
  /** @type {string[]} */
  const failures = [];
  for (let i = 0; i < all.length; i += 4) {
    const batch = all.slice(i, i + 4);
    const got = await Promise.allSettled(batch.map((reg) => run(reg.supplement)));
    got.forEach((g, n) => {
      if (g.status === "fulfilled") values.push(g.value);
      else failures.push(`${batch[n].pluginId}: ${g.reason?.message ?? g.reason}`);
    });
  }
  if (!failures.length) return { corpus: "wiki", outcome: "ok", values };
  return { corpus: "wiki", outcome: "unavailable", values, error: failures.join("; ") };
}

/**
 * The wiki's hits for a search, best first, at most maxResults (default 10).
 * @param {{ query: string, maxResults?: number, agentId?: string, agentSessionKey?: string, sandboxed?: boolean }} params
 */
export async function searchWiki({ query, maxResults, agentId, agentSessionKey, sandboxed }) {
  const done = await settle((s) => s.search({ query, maxResults, agentId, agentSessionKey, sandboxed }));
  const results = done.values
    .flat()
    .filter(Boolean)
    .sort((a, b) => b.score - a.score || String(a.path).localeCompare(String(b.path)))
    .slice(0, Math.max(1, maxResults ?? 10));
  return { ...done, results };
}

/**
 * A wiki page's lines, as memory_get answers them; null when no supplement has it.
 * @param {{ relPath: string, from?: unknown, lines?: unknown, agentId?: string, agentSessionKey?: string, sandboxed?: boolean }} params
 *   `from` and `lines` as the tool was given them, for the supplement to read
 */
export async function readWiki({ relPath, from, lines, agentId, agentSessionKey, sandboxed }) {
  const done = await settle(async (s) => {
    const got = await s.get({
      lookup: relPath,
      fromLine: /** @type {number | undefined} */ (from),
      lineCount: /** @type {number | undefined} */ (lines),
      agentId,
      agentSessionKey,
      sandboxed,
    });
    if (!got) return null;
    const { content, ...details } = got;
    return { ...details, status: "ok", text: content };
  });
  return { ...done, result: done.values.find((v) => v) ?? null };
}

/** Two ranked lists as one, by score; with `balance` (both corpora asked for and both
 * holding hits) each keeps up to half of the places, the rest by score.
 * @template {{ score: number }} M
 * @template {{ score: number }} W
 * @param {M[]} memory
 * @param {W[]} wiki
 * @param {number} maxResults
 * @param {boolean} balance
 * @returns {(M | W)[]}
 */
export function mergeCorpora(memory, wiki, maxResults, balance) {
  /**
   * @param {M[]} a
   * @param {W[]} b
   */
  const byScore = (a, b) => {
    /** @type {(M | W)[]} */
    const out = [];
    let i = 0;
    let j = 0;
    while (i < a.length && j < b.length) out.push((a[i]?.score ?? 0) >= (b[j]?.score ?? 0) ? a[i++] : b[j++]);
    return [...out, ...a.slice(i), ...b.slice(j)];
  };
  if (!balance || !memory.length || !wiki.length) return byScore(memory, wiki).slice(0, maxResults);
  const half = Math.ceil(maxResults / 2);
  let m = Math.min(half, memory.length);
  let w = Math.min(half, wiki.length);
  while (m + w < maxResults && (m < memory.length || w < wiki.length)) {
    if (w >= wiki.length || (m < memory.length && memory[m].score >= wiki[w].score)) m += 1;
    else w += 1;
  }
  return byScore(memory.slice(0, m), wiki.slice(0, w)).slice(0, maxResults);
}

/**
 * What the answer says of the corpora asked (memory-core's corpora/warning/error).
 * @param {Attempt[]} attempts
 */
export function corpusMetadata(attempts) {
  const ordered = [...attempts].sort((a, b) => Number(a.corpus === "wiki") - Number(b.corpus === "wiki"));
  const warnings = ordered.flatMap((a) => {
    const label = a.corpus === "memory" ? "Memory" : "Wiki";
    if (a.error) return [`${label} corpus ${a.outcome}: ${a.error}`];
    return a.outcome === "not-registered" && ordered.length === 1
      ? [`${label} corpus is not registered; results do not cover that requested corpus.`]
      : [];
  });
  const errors = ordered.filter((a) => a.error).map((a) => a.error);
  return {
    corpora: ordered.map((a) => ({ corpus: a.corpus, outcome: a.outcome, ...(a.error ? { error: a.error } : {}) })),
    ...(warnings.length ? { warning: warnings.join(" ") } : {}),
    ...(errors.length ? { error: errors.join("; ") } : {}),
  };
}

/**
 * memory.citations: "on", "off" or "auto" (the default).
 * @param {OpenClawConfig | undefined} cfg
 * @returns {MemoryCitationsMode}
 */
export function citationsMode(cfg) {
  const mode = cfg?.memory?.citations;
  return mode === "on" || mode === "off" || mode === "auto" ? mode : "auto";
}

/**
 * Whether results carry their citation: on; off; auto in a direct chat only.
 * @param {MemoryCitationsMode} mode
 * @param {string | undefined} sessionKey
 */
export function withCitations(mode, sessionKey) {
  if (mode === "on") return true;
  if (mode === "off") return false;
  const rest = typeof sessionKey === "string" ? sessionKey.split(":").slice(2).join(":") : "";
  if (!rest) return true;
  const words = new Set(rest.toLowerCase().split(":").filter(Boolean));
  return !(words.has("channel") || words.has("group"));
}

/**
 * A memory hit as the model sees it: its corpus, and its citation when shown.
 * @param {MemorySearchResult} hit
 * @param {boolean} cite
 */
export function present(hit, cite) {
  /** @type {MemorySearchResult & { corpus: string }} */
  const out = { ...hit, corpus: hit.source };
  if (cite) {
    out.citation = hit.citation ?? `${hit.path}#L${hit.startLine}-L${hit.endLine}`;
    out.snippet = `${String(hit.snippet ?? "").trimEnd()}\n\nSource: ${out.citation}`;
  } else {
    delete out.citation;
  }
  return out;
}
