// @ts-check
// memindex's answers in OpenClaw's shapes: a hit as a MemorySearchResult (with its
// provenance, as memory-core gives it), the daemon's status as a MemoryProviderStatus.
import fs from "node:fs";
import path from "node:path";

import { classifyPath, defaultRecordReader } from "./provenance.js";

/**
 * @import {
 *   MemoryEntryProvenance, MemoryOriginClass, MemoryProviderStatus, MemorySearchResult, MemorySource,
 *   MemorySessionKind, MemoryVectorIndexState,
 * } from "../types/host.js"
 * @import { ReadRecord } from "./provenance.js"
 * @import { Settings } from "./settings.js"
 */

/**
 * What memindex's daemon answers (its protocol: indexer/api), as far as it is read here.
 * @typedef {object} DaemonHit
 * @property {string} path
 * @property {number} startLine
 * @property {number} endLine
 * @property {number} score
 * @property {string} snippet
 * @property {string} [source]
 * @property {string} [citation]
 * @property {number} [textScore]
 * @property {number} [vectorScore]
 * @property {number} [importance]
 * @property {string} [triggers]
 * @property {string} [projectKey]
 * @property {{ originClass?: string, sessionKind?: string, observedAt?: number }} [provenance]
 *
 * @typedef {object} DaemonStatus
 * @property {string} [version]
 * @property {string} [agent]
 * @property {string} [mode]
 * @property {string | null} [provider]
 * @property {string | null} [model]
 * @property {number} [dims]
 * @property {number} files
 * @property {number} chunks
 * @property {boolean} [dirty]
 * @property {boolean} [stuck]
 * @property {string | null} [lastError]
 * @property {Record<string, string | null>} [errors]
 * @property {string | null} [lastSync]
 * @property {string} [workspace]
 * @property {string} indexPath
 * @property {Record<string, { files?: number, chunks?: number }>} [sources]
 * @property {unknown[]} [skipped]
 * @property {{ enabled?: boolean, available?: boolean, pendingChunks?: number, cacheEntries?: number, reason?: string }} [vector]
 *
 * @typedef {ReturnType<typeof toOpenClawStatus>} OpenClawStatus
 */

/**
 * One memindex hit in OpenClaw's MemorySearchResult shape.
 * @param {DaemonHit} r
 * @returns {MemorySearchResult}
 */
export function toOpenClawHit(r) {
  /** @type {MemorySearchResult} */
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
  // (its class checked by withProvenance)
  if (r.provenance && typeof r.provenance.originClass === "string")
    hit.provenance = /** @type {MemoryEntryProvenance} */ ({ ...r.provenance });
  return hit;
}

const PROVENANCE_TTL_MS = 2_000;
/** @type {Set<unknown>} */
const ORIGIN_CLASSES = new Set(["owner", "agent", "system", "untrusted"]);
// the session kinds OpenClaw's MemoryEntryProvenance takes; any other is `unknown`
/** @type {Set<unknown>} */
const SESSION_KINDS = new Set(["interactive", "cron", "heartbeat", "subagent", "unknown"]);

/**
 * OpenClaw's provenance of each hit, as memory-core gives it: a memory file's class
 * is its file's (src/provenance.js: `agent`, or what OpenClaw recorded, `system` for
 * dreaming output, `untrusted` outside the workspace), observed at its mtime; a
 * transcript hit's is its messages' (memory-core's rule: the least trusted of
 * owner / agent / system / untrusted, from OpenClaw's marks on each message, the
 * session's kind, the newest message's time), read by memindex when it indexed them;
 * a transcript chunk indexed before memindex kept that is `untrusted` (provenance is
 * never defaulted upwards). Classes are cached a moment per file.
 * @param {MemorySearchResult[]} hits
 * @param {string | undefined} workspaceDir
 * @param {Map<string, { at: number, provenance: MemoryEntryProvenance }>} [cache]
 * @param {(params: { workspaceDir: string, relativePath: string, readRecord: ReadRecord }) => Promise<MemoryOriginClass>} [classify]
 */
export async function withProvenance(hits, workspaceDir, cache = new Map(), classify = classifyPath) {
  const now = Date.now();
  for (const hit of hits) {
    const given = hit.provenance;
    if (hit.source === "sessions" && given && ORIGIN_CLASSES.has(given.originClass)) {
      hit.provenance = {
        originClass: given.originClass,
        // the kind memindex read from OpenClaw's session (memory-core's kinds)
        sessionKind: SESSION_KINDS.has(given.sessionKind) ? /** @type {MemorySessionKind} */ (given.sessionKind) : "unknown",
        observedAt: Number.isFinite(given.observedAt) ? given.observedAt : 0,
      };
      continue;
    }
    if (hit.source !== "memory" || !workspaceDir) {
      hit.provenance = { originClass: "untrusted", sessionKind: "unknown", observedAt: 0 };
      continue;
    }
    let got = cache.get(hit.path);
    if (!got || now - got.at > PROVENANCE_TTL_MS) {
      /** @type {MemoryOriginClass} */
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

/**
 * @param {DaemonStatus} st
 * @returns {MemoryVectorIndexState}
 */
function vectorIndexState(st) {
  if (!st.vector?.enabled && !st.provider) return { state: "empty" };
  if (!st.chunks) return { state: "empty" };
  if ((st.vector?.pendingChunks ?? 0) > 0) return { state: "incomplete" };
  return st.vector?.enabled ? { state: "complete" } : { state: "unverified" };
}

/**
 * memindex's status object in OpenClaw's MemoryProviderStatus shape.
 * @param {DaemonStatus} st
 * @param {Settings} settings
 */
export function toOpenClawStatus(st, settings) {
  const sourceCounts = Object.entries(st.sources ?? {}).map(([source, n]) => ({
    source: /** @type {MemorySource} */ (source), // memindex's sources are OpenClaw's
    files: n.files ?? 0,
    chunks: n.chunks ?? 0,
  }));
  const errors = /** @type {string[]} */ (Object.values(st.errors ?? {}).filter(Boolean));
  return /** @satisfies {MemoryProviderStatus} */ ({
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
  });
}
