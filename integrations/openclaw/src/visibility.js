// @ts-check
// Who may see a session-transcript hit: OpenClaw's session visibility, and the
// protected private recall of Active Memory ("remember across conversations").
//
// The rules are memory-core's (its session-search visibility), applied to memindex's
// hits with the host SDK's own pieces: the gateway's session store (which key owns a
// transcript, its chat type), the session-tools visibility guard
// (`tools.sessions.visibility`, agent-to-agent policy, sandbox clamp) and the
// transcript-archive registry. In short:
//
// * a memory-file hit is always kept, unless a private recall asked for transcripts
//   only (`corpus: "sessions"`);
// * an ordinary search (no `conversationRecall`): a transcript hit is shown when the
//   requesting session may read the history of a session that owns the transcript
//   (by default every session of the same agent; never another agent's without an
//   agent-to-agent grant); with no requesting session, only to a caller that says
//   it is the agent's own trusted operator surface (`trustedAgentScope`: its CLI);
// * a private recall (`conversationRecall: {anchorSessionKey, scope:
//   "same-agent-private"}`, asked by Active Memory's sub-agent of that anchor):
//   only when the anchor itself is a private conversation of this agent (a direct
//   or explicit chat, never a group or channel, nor a cron, heartbeat, hook, node
//   or sub-agent run), and then only transcripts of the same agent's other private
//   conversations: never the conversation being answered, never a group's, never a
//   deleted one. An unknown transcript is withheld. Anything else withholds every
//   transcript hit.
//
// Without the host SDK (logged once) nothing of a transcript is shown to a private
// recall or to a caller without a session, nor where tools.sessions.visibility narrows
// what a session may read ("self", "tree"): those rules need the host's session
// store; otherwise an ordinary search keeps the per-agent rule (agents.js: the same
// agent only, never sandboxed).
import { authorizeHits, normalizeAgentId } from "./agents.js";
import { importHostSdk } from "./host.js";

/**
 * @import {
 *   AuthorizeSearchHitsParams, ConversationRecall, MemoryCoreHostEngineSessionsModule,
 *   MemoryCoreHostRuntimeCoreModule, MemorySearchResult, OpenClawConfig, SessionEntry,
 *   SessionStoreRuntimeModule, SessionTranscriptHitModule, SessionVisibilityModule,
 * } from "../types/host.js"
 * @typedef {{
 *   visibility: SessionVisibilityModule,
 *   hit: SessionTranscriptHitModule,
 *   store: Partial<SessionStoreRuntimeModule>,
 *   core: Pick<MemoryCoreHostRuntimeCoreModule, "parseAgentSessionKey" | "resolveDefaultAgentId" | "resolveCanonicalMainSessionKey">,
 *   sessions: MemoryCoreHostEngineSessionsModule,
 * }} Host the SDK functions used here
 * @typedef {() => Promise<{ host: Host | null, problem?: string | null }>} HostLoader
 */

const RECALL_SUFFIX = /^:active-memory:[a-f0-9]{12}$/i;
const AUTOMATION = /:(?:active-memory|cron|heartbeat|hook|node|subagent)(?::|$)/;

/**
 * The SDK functions this module uses, or null with the reason (a module lacking one
 * of the functions called here is as good as missing: the host's rules are not there).
 * @type {HostLoader}
 */
async function loadHost() {
  const visibility = await importHostSdk("session-visibility", [
    "resolveEffectiveSessionToolsVisibility",
    "resolveSandboxSessionToolsVisibility",
    "createSessionVisibilityGuard",
    "createAgentToAgentPolicy",
  ]);
  if (!visibility.mod) return { host: null, problem: visibility.problem };
  const hit = await importHostSdk("session-transcript-hit", [
    "loadCombinedSessionStoreForGateway",
    "extractTranscriptIdentityFromSessionsMemoryHit",
    "resolveTranscriptStemToSessionKeys",
  ]);
  if (!hit.mod) return { host: null, problem: hit.problem };
  const store = await importHostSdk("session-store-runtime");
  if (!store.mod) return { host: null, problem: store.problem };
  const core = await importHostSdk("memory-core-host-runtime-core", ["resolveCanonicalMainSessionKey"]);
  if (!core.mod) return { host: null, problem: core.problem };
  const sessions = await importHostSdk("memory-core-host-engine-sessions", ["loadArchivedSessions"]);
  if (!sessions.mod) return { host: null, problem: sessions.problem };
  return {
    host: { visibility: visibility.mod, hit: hit.mod, store: store.mod, core: core.mod, sessions: sessions.mod },
    problem: null,
  };
}

const lower = (/** @type {unknown} */ s) => (typeof s === "string" ? s.trim().toLowerCase() : "");

/**
 * The agent a session key belongs to (`agent:<id>:…`), else the default agent.
 * @param {Host} host
 * @param {OpenClawConfig} cfg
 * @param {string} key
 */
function keyAgent(host, cfg, key) {
  const parsed = host.core.parseAgentSessionKey?.(key);
  if (parsed?.agentId) return normalizeAgentId(parsed.agentId);
  try {
    return normalizeAgentId(host.core.resolveDefaultAgentId(cfg));
  } catch {
    return "main";
  }
}

/**
 * @param {SessionEntry | undefined} a
 * @param {SessionEntry | undefined} b
 */
function sameTranscript(a, b) {
  if (!a || !b) return false;
  const id = typeof a.sessionId === "string" ? a.sessionId.trim() : "";
  const file = typeof a.sessionFile === "string" ? a.sessionFile.trim() : "";
  return Boolean((id && b.sessionId?.trim?.() === id) || (file && b.sessionFile?.trim?.() === file));
}

/**
 * A private conversation of `agentId`: a direct or explicit chat, nothing shared.
 * @param {{ host: Pick<Host, "store"> | null, agentId: string, key: string, entry?: SessionEntry }} params
 */
export function isPrivateConversation({ host, agentId, key, entry }) {
  if (!entry) return false;
  const k = lower(key);
  const origin = host?.store?.sessionDeliveryOrigin?.(entry);
  const types = [entry.chatType, origin?.chatType].filter((t) => t !== undefined);
  if (types.some((t) => t === "group" || t === "channel")) return false;
  if (/:active-memory:[a-f0-9]{12}$/i.test(k)) return false;
  const prefix = `agent:${lower(agentId)}:`;
  if (k === "global" || k === `${prefix}global`) return false;
  if (k.startsWith(`${prefix}explicit:`)) return types.length > 0 && types.every((t) => t === "direct");
  if (k.includes(":group:") || k.includes(":channel:") || AUTOMATION.test(k)) return false;
  if (types.length > 0) return types.every((t) => t === "direct");
  return k.includes(":direct:") || k.includes(":dm:");
}

/**
 * A hit path's file name.
 * @param {string} path
 */
function fileName(path) {
  return path.replace(/\\/g, "/").split("/").at(-1) ?? "";
}

/** @param {string} path */
function isDeletedArchive(path) {
  return /\.jsonl\.deleted\./.test(fileName(path));
}

/**
 * The hits the requester may see. `hits` are OpenClaw-shaped (source "memory" |
 * "sessions"); `agentId` is the manager's agent (memindex keeps one index per agent).
 * @template {MemorySearchResult | { path: string, source: string }} H
 * @param {Omit<AuthorizeSearchHitsParams, "hits"> & { hits: H[] }} params
 * @param {HostLoader} [loader]
 * @returns {Promise<H[]>}
 */
export async function filterHits(params, loader = loadHost) {
  const { cfg = {}, agentId, requesterSessionKey, sandboxed, conversationRecall, trustedAgentScope } =
    params;
  const hits = Array.isArray(params.hits) ? params.hits : [];
  const recall = conversationRecall && typeof conversationRecall === "object" ? conversationRecall : null;
  const memoryHits = hits.filter((h) => h?.source !== "sessions");
  const keepMemory = !recall || recall.corpus === "configured" ? memoryHits : [];
  const sessionHits = hits.filter((h) => h?.source === "sessions");
  if (!sessionHits.length) return keepMemory;
  const { host } = await loader();
  if (!host) {
    const narrowed = ["self", "tree"].includes(lower(cfg.tools?.sessions?.visibility));
    if (recall || !requesterSessionKey || narrowed) return keepMemory; // fail closed
    return authorizeHits({ agentId, requesterSessionKey, sandboxed, hits });
  }
  const owner = normalizeAgentId(agentId || keyAgent(host, cfg, requesterSessionKey ?? ""));
  const { store, storePath } = host.hit.loadCombinedSessionStoreForGateway(cfg, { agentId: owner });
  const anchor = recall?.anchorSessionKey?.trim?.() ?? "";
  const anchorEntry = anchor ? store[anchor] : undefined;
  if (recall) {
    const requester = requesterSessionKey?.trim?.() ?? "";
    const trustedRequester =
      requester === anchor || (requester.startsWith(anchor) && RECALL_SUFFIX.test(requester.slice(anchor.length)));
    const authorized =
      !sandboxed &&
      recall.scope === "same-agent-private" &&
      (recall.corpus === "sessions" || recall.corpus === "configured") &&
      anchor &&
      trustedRequester &&
      keyAgent(host, cfg, anchor) === owner &&
      isPrivateConversation({ host, agentId: owner, key: anchor, entry: anchorEntry }) &&
      Object.entries(store).every(
        ([k, e]) =>
          k === anchor || !sameTranscript(anchorEntry, e) || isPrivateConversation({ host, agentId: owner, key: k, entry: e }),
      );
    if (!authorized) return keepMemory;
  }
  let guard = null;
  const visibility = host.visibility.resolveEffectiveSessionToolsVisibility({ cfg, sandboxed: Boolean(sandboxed) });
  if (!recall && requesterSessionKey) {
    const requesterAgent = keyAgent(host, cfg, requesterSessionKey);
    const sandboxAll = host.visibility.resolveSandboxSessionToolsVisibility(cfg) === "all";
    guard = await host.visibility.createSessionVisibilityGuard({
      action: "history",
      requesterSessionKey,
      requesterAgentId: requesterAgent,
      mainSessionKey:
        !sandboxed || sandboxAll
          ? host.core.resolveCanonicalMainSessionKey({
              agentId: requesterAgent,
              mainKey: cfg.session?.mainKey,
              sessionScope: cfg.session?.scope,
            })
          : undefined,
      visibility,
      a2aPolicy: host.visibility.createAgentToAgentPolicy(cfg),
    });
  }
  const trustedOperator = Boolean(trustedAgentScope) && !recall && !requesterSessionKey && !sandboxed;
  const archiveNames = [
    ...new Set(
      sessionHits.flatMap((h) => {
        const id = host.hit.extractTranscriptIdentityFromSessionsMemoryHit(h.path);
        return id?.archived ? [fileName(h.path)] : [];
      }),
    ),
  ];
  const archives = new Map(
    (archiveNames.length
      ? host.sessions.loadArchivedSessions({ agentId: owner, archiveNames, storePath })
      : []
    ).map((a) => [a.archiveName, a]),
  );
  const allowedKey = (/** @type {string} */ key) => {
    if (!recall) {
      const shared = cfg.session?.scope === "global" && lower(key) === "global";
      return guard?.check(shared ? `agent:${owner}:global` : key).allowed === true;
    }
    const entry = store[key];
    if (key === anchor || sameTranscript(anchorEntry, entry)) return false;
    if (keyAgent(host, cfg, key) !== owner) return false;
    return isPrivateConversation({ host, agentId: owner, key, entry });
  };
  const withAliases = (/** @type {string[]} */ keys) => {
    const all = new Set(keys);
    for (const key of keys) {
      const entry = store[key];
      if (!entry) continue;
      for (const [k, e] of Object.entries(store)) if (sameTranscript(entry, e)) all.add(k);
    }
    return [...all];
  };
  const kept = [];
  for (const hit of sessionHits) {
    if (!trustedOperator && !recall && !guard) continue; // no requesting session: none
    const id = host.hit.extractTranscriptIdentityFromSessionsMemoryHit(hit.path);
    if (!id) continue;
    if (recall && isDeletedArchive(hit.path)) continue;
    if (id.ownerAgentId && normalizeAgentId(id.ownerAgentId) !== owner) continue;
    if (trustedOperator) {
      kept.push(hit);
      continue;
    }
    const archive = id.archived ? archives.get(fileName(hit.path)) : undefined;
    const keys = (
      archive?.sessionKey
        ? [archive.sessionKey]
        : host.hit.resolveTranscriptStemToSessionKeys({
            store,
            stem: archive?.sessionId ?? id.stem,
            ...(id.archived ? { archivedOwnerAgentId: id.ownerAgentId ?? owner } : {}),
          })
    ).filter((k) => (cfg.session?.scope === "global" && lower(k) === "global") || keyAgent(host, cfg, k) === owner);
    if (!keys.length) {
      // a live transcript of this agent that no session entry names (an old window):
      // shown where the agent's own sessions all are, withheld from a private recall
      const live = !id.archived && id.ownerAgentId && normalizeAgentId(id.ownerAgentId) === owner;
      if (live && !recall && (visibility === "agent" || visibility === "all")) kept.push(hit);
      continue;
    }
    const ok = recall ? withAliases(keys).every(allowedKey) : keys.some(allowedKey);
    if (ok) kept.push(hit);
  }
  // keep the engine's order (memory and transcript hits interleaved by rank)
  const keep = new Set([...keepMemory, ...kept]);
  return hits.filter((h) => keep.has(h));
}
