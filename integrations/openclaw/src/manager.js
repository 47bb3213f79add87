// @ts-check
// The MemorySearchManager OpenClaw calls, one per agent, backed by the daemon.
import { normalizeAgentId } from "./agents.js";
import { toOpenClawHit, toOpenClawStatus, withProvenance } from "./answers.js";
import { ensureDaemon } from "./daemon.js";
import { call } from "./rpc.js";

/**
 * @import {
 *   MemoryEntryProvenance, MemoryProviderStatus, MemoryReadResult, MemorySearchManager, MemorySearchResult,
 * } from "../types/host.js"
 * @import { DaemonHit, DaemonStatus } from "./answers.js"
 * @import { Settings } from "./settings.js"
 */

const SOURCES = new Set(["memory", "sessions"]);
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/**
 * @param {unknown} value
 * @returns {string[]}
 */
function projectKeys(value) {
  return Array.isArray(value)
    ? value.filter((k) => typeof k === "string" && k.trim()).map((k) => k.trim()).slice(0, 16)
    : [];
}

/**
 * @param {unknown} value
 * @returns {value is number}
 */
function isPositiveInt(value) {
  return Number.isInteger(value) && /** @type {number} */ (value) > 0;
}

/**
 * @typedef {object} SearchOptions
 * @property {unknown} [activeProjectKeys]
 * @property {number} [maxResults]
 * @property {number} [minScore]
 * @property {string[]} [sources]
 * @property {boolean} [lexicalOnly]
 * @property {AbortSignal} [signal]
 */

/** @implements {MemorySearchManager} */
export class MemindexManager {
  /** @param {{ agentId: string, settings: Settings }} opts */
  constructor({ agentId, settings }) {
    this.agentId = agentId;
    this.settings = settings;
    /** @type {DaemonStatus | null} */
    this.lastStatus = null;
    /** @type {Error | null} */
    this.lastError = null;
    /** @type {Map<string, { at: number, provenance: MemoryEntryProvenance }>} */
    this.provenanceCache = new Map();
  }

  /**
   * @param {string} method
   * @param {Record<string, unknown>} params
   * @param {{ timeoutMs?: number, signal?: AbortSignal }} [opts]
   * @returns {Promise<any>}
   */
  async #call(method, params, opts = {}) {
    const send = () =>
      call(this.settings.socket, method, { ...params, agent: this.agentId }, {
        timeoutMs: opts.timeoutMs ?? this.settings.timeoutMs,
        signal: opts.signal,
      });
    try {
      return await send();
    } catch (err) {
      // Only when nothing listens: start the daemon (or say why not), then once more.
      if (err.code !== "daemon_unavailable") throw err;
      await ensureDaemon(this.settings);
      return send();
    }
  }

  /**
   * Fetch status; when the agent has not finished its first sync, wait for it (bounded).
   * @param {{ waitForFirstSync?: boolean }} [opts]
   * @returns {Promise<DaemonStatus>}
   */
  async refresh({ waitForFirstSync = false } = {}) {
    const deadline = Date.now() + this.settings.startTimeoutMs;
    for (;;) {
      /** @type {DaemonStatus} */
      let status;
      try {
        status = await this.#call("status", {});
        this.lastStatus = status;
        this.lastError = null;
      } catch (err) {
        this.lastError = err;
        throw err;
      }
      const synced = status.lastSync != null;
      if (!waitForFirstSync || synced || Date.now() >= deadline) return status;
      await sleep(200);
    }
  }

  /**
   * @param {string} query
   * @param {SearchOptions} [opts]
   */
  async search(query, opts = {}) {
    if (typeof query !== "string" || !query.trim()) return [];
    /** @type {Record<string, unknown>} */
    const params = {};
    const active = projectKeys(opts.activeProjectKeys);
    if (active.length) params.activeProjectKeys = active;
    if (isPositiveInt(opts.maxResults)) params.maxResults = opts.maxResults;
    if (typeof opts.minScore === "number" && Number.isFinite(opts.minScore))
      params.minScore = Math.max(0, Math.min(1, opts.minScore));
    if (Array.isArray(opts.sources)) {
      const wanted = opts.sources.filter((/** @type {string} */ s) => SOURCES.has(s));
      if (!wanted.length) return [];
      params.sources = wanted;
    }
    if (opts.lexicalOnly) params.mode = "keyword";
    return (await this.searchFull(query, params, opts.signal)).results;
  }

  /**
   * memory_search's whole answer (provider, model, mode, fallback) for the tool.
   * @param {string} query
   * @param {Record<string, unknown>} [params]
   * @param {AbortSignal} [signal]
   * @returns {Promise<{ results: MemorySearchResult[], provider?: string, model?: string, mode?: string, fallback?: unknown }>}
   */
  async searchFull(query, params = {}, signal) {
    // time words ("yesterday", "last week") are read against the question's time
    /** @type {{ asOf: string, timeZone?: string }} */
    const when = { asOf: new Date().toISOString() };
    if (this.settings.userTimezone) when.timeZone = this.settings.userTimezone;
    const res = await this.#call("memory_search", { ...when, ...params, query }, { signal });
    const results = /** @type {DaemonHit[]} */ (res.results ?? []).map(toOpenClawHit);
    await withProvenance(results, this.lastStatus?.workspace, this.provenanceCache);
    return { ...res, results };
  }

  /** memindex's memory audit (`memory_audit`): what is wrong with the memory itself.
   * An operator's command, never on a request's path: it may take seconds.
   * @param {string[]} [kinds]
   */
  async audit(kinds) {
    const params = Array.isArray(kinds) && kinds.length ? { kinds } : {};
    return this.#call("memory_audit", params, { timeoutMs: 300_000 });
  }

  /**
   * Lane 1: MEMORY.md / USER.md entries with trigger phrases (OpenClaw's trigger recall).
   * @param {{ activeProjectKeys?: unknown, limit?: number }} [opts]
   */
  async listTriggerCandidates(opts = {}) {
    return this.#curated("triggers", opts);
  }

  /**
   * The "Project Memory" block: curated entries of the active repositories.
   * @param {{ activeProjectKeys?: unknown, limit?: number }} [opts]
   */
  async listCuratedProjectCandidates(opts = {}) {
    if (!projectKeys(opts.activeProjectKeys).length) return [];
    return this.#curated("projects", opts);
  }

  /**
   * @param {"triggers" | "projects"} kind
   * @param {{ activeProjectKeys?: unknown, limit?: number }} opts
   */
  async #curated(kind, opts) {
    /** @type {Record<string, unknown>} */
    const params = { kind };
    const active = projectKeys(opts.activeProjectKeys);
    if (active.length) params.activeProjectKeys = active;
    if (isPositiveInt(opts.limit)) params.limit = Math.min(opts.limit, 512);
    const res = await this.#call("memory_curated", params);
    const hits = /** @type {DaemonHit[]} */ (res.results ?? []).map(toOpenClawHit);
    await withProvenance(hits, this.lastStatus?.workspace, this.provenanceCache);
    // as memory-core lists them: only files whose provenance is eligible
    return hits.filter((h) => h.provenance?.originClass === "owner" || h.provenance?.originClass === "agent");
  }

  /**
   * @param {{ relPath: string, from?: unknown, lines?: unknown }} params `from` and
   *   `lines` as the tool was given them: only positive integers are passed on
   * @returns {Promise<MemoryReadResult>}
   */
  async readFile({ relPath, from, lines }) {
    /** @type {Record<string, unknown>} */
    const params = { path: relPath };
    if (isPositiveInt(from)) params.from = from;
    if (isPositiveInt(lines)) params.lines = lines;
    try {
      const r = await this.#call("memory_get", params);
      /** @type {MemoryReadResult} */
      const out = { status: "ok", text: r.text, path: r.path, from: r.from, lines: r.lines };
      if (r.truncated) out.truncated = true;
      if (Number.isInteger(r.nextFrom)) out.nextFrom = r.nextFrom;
      return out;
    } catch (err) {
      if (err.code === "not_found") return { status: "not_found", text: "", path: relPath };
      throw err;
    }
  }

  /**
   * OpenClaw's MemoryProviderStatus: memindex's, or what is known without it.
   * @returns {MemoryProviderStatus}
   */
  status() {
    if (this.lastStatus) return toOpenClawStatus(this.lastStatus, this.settings);
    return {
      backend: "builtin",
      provider: "memindex/unavailable",
      ...(this.lastError ? { lastSyncError: this.lastError.message } : {}),
      custom: { engine: "memindex", socket: this.settings.socket },
    };
  }

  /**
   * @param {{ force?: boolean, reason?: string, progress?: (update: { completed: number, total: number, label?: string }) => void }} [params]
   */
  async sync(params = {}) {
    params.progress?.({ completed: 0, total: 1, label: "memindex reindex" });
    const res = await this.#call(
      "reindex",
      { force: Boolean(params.force) },
      { timeoutMs: this.settings.reindexTimeoutMs },
    );
    params.progress?.({ completed: 1, total: 1, label: "memindex reindex" });
    await this.refresh().catch(() => {});
    return res;
  }

  getCachedEmbeddingAvailability() {
    const st = this.lastStatus;
    if (!st) return null;
    return st.provider
      ? { ok: true, cached: true }
      : { ok: false, cached: true, error: "memindex runs keyword-only (no embedding provider)" };
  }

  async probeEmbeddingAvailability() {
    try {
      await this.refresh();
    } catch (err) {
      return { ok: false, checked: true, error: err.message };
    }
    return { ...(this.getCachedEmbeddingAvailability() ?? { ok: false }), checked: true, cached: false };
  }

  async probeVectorStoreAvailability() {
    try {
      return Boolean((await this.refresh()).vector?.available);
    } catch {
      return false;
    }
  }

  async probeVectorAvailability() {
    try {
      return Boolean((await this.refresh()).vector?.enabled);
    } catch {
      return false;
    }
  }

  async close() {}
}

/** Managers by agent id; a failed daemon start is an error result, never a hang. */
export class ManagerPool {
  /** @param {Settings} settings */
  constructor(settings) {
    this.settings = settings;
    /** @type {Map<string, Promise<MemindexManager>>} */
    this.managers = new Map();
  }

  /**
   * The agent's manager, made once (concurrent first calls share one wait).
   * @param {string | undefined} rawAgentId
   * @returns {Promise<MemindexManager>}
   */
  get(rawAgentId) {
    const agentId = normalizeAgentId(rawAgentId);
    let pending = this.managers.get(agentId);
    if (!pending) {
      const m = new MemindexManager({ agentId, settings: this.settings });
      pending = m.refresh({ waitForFirstSync: true }).then(() => m);
      this.managers.set(agentId, pending);
      pending.catch(() => {
        if (this.managers.get(agentId) === pending) this.managers.delete(agentId);
      });
    }
    return pending;
  }

  /** @param {string} [agentId] */
  close(agentId) {
    if (agentId === undefined) this.managers.clear();
    else this.managers.delete(normalizeAgentId(agentId));
  }
}

