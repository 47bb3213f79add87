// The MemorySearchManager OpenClaw calls, one per agent, backed by the daemon.
import fs from "node:fs";
import path from "node:path";

import { normalizeAgentId } from "./agents.js";
import { ensureDaemon } from "./daemon.js";
import { classifyPath, defaultRecordReader } from "./provenance.js";
import { call } from "./rpc.js";

const SOURCES = new Set(["memory", "sessions"]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One memindex hit in OpenClaw's MemorySearchResult shape. */
export function toOpenClawHit(r) {
  const hit = {
    path: r.path,
    startLine: r.startLine,
    endLine: r.endLine,
    score: r.score,
    snippet: r.snippet,
    source: r.source === "sessions" ? "sessions" : "memory",
    citation: r.citation ?? `${r.path}#L${r.startLine}-L${r.endLine}`,
  };
  if (typeof r.textScore === "number") hit.textScore = r.textScore;
  if (typeof r.vectorScore === "number") hit.vectorScore = r.vectorScore;
  // a MEMORY.md / USER.md entry's written signals (OpenClaw's annotations)
  if (Number.isInteger(r.importance)) hit.importance = r.importance;
  if (typeof r.triggers === "string" && r.triggers) hit.triggers = r.triggers;
  if (typeof r.projectKey === "string" && r.projectKey) hit.projectKey = r.projectKey;
  // a transcript hit's provenance, as memindex read it from the messages' OpenClaw marks
  if (r.provenance && typeof r.provenance.originClass === "string") hit.provenance = { ...r.provenance };
  return hit;
}

const PROVENANCE_TTL_MS = 2_000;
const ORIGIN_CLASSES = new Set(["owner", "agent", "system", "untrusted"]);

/**
 * OpenClaw's provenance of each hit, as memory-core gives it: a memory file's class
 * is its file's (src/provenance.js: `agent`, or what OpenClaw recorded, `system` for
 * dreaming output, `untrusted` outside the workspace), observed at its mtime; a
 * transcript hit's is its messages' (memory-core's rule: the least trusted of
 * owner / agent / system / untrusted, from OpenClaw's marks on each message, the
 * session's kind, the newest message's time), read by memindex when it indexed them;
 * a transcript chunk indexed before memindex kept that is `untrusted` (provenance is
 * never defaulted upwards). Classes are cached a moment per file.
 */
export async function withProvenance(hits, workspaceDir, cache = new Map(), classify = classifyPath) {
  const now = Date.now();
  for (const hit of hits) {
    if (hit.source === "sessions" && ORIGIN_CLASSES.has(hit.provenance?.originClass)) {
      hit.provenance = {
        originClass: hit.provenance.originClass,
        sessionKind: typeof hit.provenance.sessionKind === "string" ? hit.provenance.sessionKind : "unknown",
        observedAt: Number.isFinite(hit.provenance.observedAt) ? hit.provenance.observedAt : 0,
      };
      continue;
    }
    if (hit.source !== "memory" || !workspaceDir) {
      hit.provenance = { originClass: "untrusted", sessionKind: "unknown", observedAt: 0 };
      continue;
    }
    let got = cache.get(hit.path);
    if (!got || now - got.at > PROVENANCE_TTL_MS) {
      let originClass = "untrusted";
      let observedAt = 0;
      try {
        originClass = await classify({ workspaceDir, relativePath: hit.path, readRecord: defaultRecordReader });
        observedAt = Math.floor((await fs.promises.stat(path.resolve(workspaceDir, hit.path))).mtimeMs);
      } catch {
        // unreadable: untrusted, never guessed upwards
      }
      got = { at: now, provenance: { originClass, sessionKind: "unknown", observedAt } };
      cache.set(hit.path, got);
    }
    hit.provenance = { ...got.provenance };
  }
  return hits;
}

function vectorIndexState(st) {
  if (!st.vector?.enabled && !st.provider) return { state: "empty" };
  if (!st.chunks) return { state: "empty" };
  if ((st.vector?.pendingChunks ?? 0) > 0) return { state: "incomplete" };
  return st.vector?.enabled ? { state: "complete" } : { state: "unverified" };
}

/** memindex's status object in OpenClaw's MemoryProviderStatus shape. */
export function toOpenClawStatus(st, settings) {
  const sourceCounts = Object.entries(st.sources ?? {}).map(([source, n]) => ({
    source,
    files: n.files ?? 0,
    chunks: n.chunks ?? 0,
  }));
  const errors = Object.values(st.errors ?? {}).filter(Boolean);
  return {
    // OpenClaw's type has one backend value; the engine is named in `custom`
    // and in `provider`'s prefix, which `openclaw status` prints.
    backend: "builtin",
    provider: `memindex/${st.provider ?? "none"}`,
    ...(st.model ? { model: st.model } : {}),
    files: st.files,
    chunks: st.chunks,
    dirty: Boolean(st.dirty),
    ...(st.lastError || errors.length ? { lastSyncError: st.lastError ?? errors[0] } : {}),
    ...(st.workspace ? { workspaceDir: st.workspace } : {}),
    dbPath: st.indexPath,
    sources: sourceCounts.map((s) => s.source),
    sourceCounts,
    cache: { enabled: true, entries: st.vector?.cacheEntries ?? 0 },
    fts: { enabled: true, available: true },
    vector: {
      enabled: Boolean(st.vector?.enabled),
      available: Boolean(st.vector?.available),
      semanticAvailable: Boolean(st.vector?.enabled),
      index: vectorIndexState(st),
      ...(st.dims ? { dims: st.dims } : {}),
      ...(st.vector?.reason ? { loadError: st.vector.reason } : {}),
    },
    custom: {
      engine: "memindex",
      version: st.version,
      agent: st.agent,
      mode: st.mode,
      socket: settings.socket,
      lastSync: st.lastSync ?? null,
      stuck: Boolean(st.stuck),
      skipped: (st.skipped ?? []).length,
    },
  };
}

function projectKeys(value) {
  return Array.isArray(value)
    ? value.filter((k) => typeof k === "string" && k.trim()).map((k) => k.trim()).slice(0, 16)
    : [];
}

export class MemindexManager {
  constructor({ agentId, settings }) {
    this.agentId = agentId;
    this.settings = settings;
    this.lastStatus = null;
    this.lastError = null;
    this.provenanceCache = new Map();
  }

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

  /** Fetch status; when the agent has not finished its first sync, wait for it (bounded). */
  async refresh({ waitForFirstSync = false } = {}) {
    const deadline = Date.now() + this.settings.startTimeoutMs;
    for (;;) {
      try {
        this.lastStatus = await this.#call("status", {});
        this.lastError = null;
      } catch (err) {
        this.lastError = err;
        throw err;
      }
      const synced = this.lastStatus.lastSync != null;
      if (!waitForFirstSync || synced || Date.now() >= deadline) return this.lastStatus;
      await sleep(200);
    }
  }

  async search(query, opts = {}) {
    if (typeof query !== "string" || !query.trim()) return [];
    const params = {};
    const active = projectKeys(opts.activeProjectKeys);
    if (active.length) params.activeProjectKeys = active;
    if (Number.isInteger(opts.maxResults) && opts.maxResults > 0) params.maxResults = opts.maxResults;
    if (typeof opts.minScore === "number" && Number.isFinite(opts.minScore))
      params.minScore = Math.max(0, Math.min(1, opts.minScore));
    if (Array.isArray(opts.sources)) {
      const wanted = opts.sources.filter((s) => SOURCES.has(s));
      if (!wanted.length) return [];
      params.sources = wanted;
    }
    if (opts.lexicalOnly) params.mode = "keyword";
    return (await this.searchFull(query, params, opts.signal)).results;
  }

  /** memory_search's whole answer (provider, model, mode, fallback) for the tool. */
  async searchFull(query, params = {}, signal) {
    // time words ("yesterday", "last week") are read against the question's time
    const when = { asOf: new Date().toISOString() };
    if (this.settings.userTimezone) when.timeZone = this.settings.userTimezone;
    const res = await this.#call("memory_search", { ...when, ...params, query }, { signal });
    const results = (res.results ?? []).map(toOpenClawHit);
    await withProvenance(results, this.lastStatus?.workspace, this.provenanceCache);
    return { ...res, results };
  }

  /** memindex's memory audit (`memory_audit`): what is wrong with the memory itself.
   * An operator's command, never on a request's path: it may take seconds. */
  async audit(kinds) {
    const params = Array.isArray(kinds) && kinds.length ? { kinds } : {};
    return this.#call("memory_audit", params, { timeoutMs: 300_000 });
  }

  /** Lane 1: MEMORY.md / USER.md entries with trigger phrases (OpenClaw's trigger recall). */
  async listTriggerCandidates(opts = {}) {
    return this.#curated("triggers", opts);
  }

  /** The "Project Memory" block: curated entries of the active repositories. */
  async listCuratedProjectCandidates(opts = {}) {
    if (!projectKeys(opts.activeProjectKeys).length) return [];
    return this.#curated("projects", opts);
  }

  async #curated(kind, opts) {
    const params = { kind };
    const active = projectKeys(opts.activeProjectKeys);
    if (active.length) params.activeProjectKeys = active;
    if (Number.isInteger(opts.limit) && opts.limit > 0) params.limit = Math.min(opts.limit, 512);
    const res = await this.#call("memory_curated", params);
    const hits = (res.results ?? []).map(toOpenClawHit);
    await withProvenance(hits, this.lastStatus?.workspace, this.provenanceCache);
    // as memory-core lists them: only files whose provenance is eligible
    return hits.filter((h) => h.provenance.originClass === "owner" || h.provenance.originClass === "agent");
  }

  async readFile({ relPath, from, lines } = {}) {
    const params = { path: relPath };
    if (Number.isInteger(from) && from > 0) params.from = from;
    if (Number.isInteger(lines) && lines > 0) params.lines = lines;
    try {
      const r = await this.#call("memory_get", params);
      const out = { status: "ok", text: r.text, path: r.path, from: r.from, lines: r.lines };
      if (r.truncated) out.truncated = true;
      if (Number.isInteger(r.nextFrom)) out.nextFrom = r.nextFrom;
      return out;
    } catch (err) {
      if (err.code === "not_found") return { status: "not_found", text: "", path: relPath };
      throw err;
    }
  }

  status() {
    if (this.lastStatus) return toOpenClawStatus(this.lastStatus, this.settings);
    return {
      backend: "builtin",
      provider: "memindex/unavailable",
      ...(this.lastError ? { lastSyncError: this.lastError.message } : {}),
      custom: { engine: "memindex", socket: this.settings.socket },
    };
  }

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
    return { ...this.getCachedEmbeddingAvailability(), checked: true, cached: false };
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
  constructor(settings) {
    this.settings = settings;
    this.managers = new Map();
  }

  /** The agent's manager, made once (concurrent first calls share one wait). */
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

  close(agentId) {
    if (agentId === undefined) this.managers.clear();
    else this.managers.delete(normalizeAgentId(agentId));
  }
}

