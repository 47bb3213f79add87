// @ts-check
// Agent ids and who may see a session-transcript hit.

/** @import { AgentEntry, OpenClawConfig } from "../types/host.js" */

/**
 * An agent id as OpenClaw normalises it: trimmed and lower-cased, runs of other
 * characters than a-z 0-9 _ - as one "-", no leading or trailing "-", at most 64
 * characters; "main" when nothing is left.
 * @param {unknown} value
 */
export function normalizeAgentId(value) {
  const text = typeof value === "string" ? value.trim().toLowerCase() : "";
  const id = text
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^-+/, "")
    .replace(/-+$/, "")
    .slice(0, 64);
  return id || "main";
}

/**
 * The agent named by an OpenClaw session key (`agent:<id>:...`), else undefined.
 * @param {unknown} sessionKey
 */
export function sessionKeyAgent(sessionKey) {
  const m = /^agent:([^:]+):/i.exec(typeof sessionKey === "string" ? sessionKey.trim() : "");
  return m ? normalizeAgentId(m[1]) : undefined;
}

/**
 * The agent ids an openclaw.json configures (``agents.entries`` when it has it, else
 * ``agents.list``), normalised, the default agent first: the one marked
 * ``default: true``, else "main" (OpenClaw asks which when several are unmarked).
 * @param {OpenClawConfig | undefined} cfg
 * @returns {string[]}
 */
export function configuredAgents(cfg) {
  const agents = cfg?.agents ?? {};
  /** @type {[string, AgentEntry][]} */
  const out = [];
  if (agents.entries && typeof agents.entries === "object" && !Array.isArray(agents.entries)) {
    for (const [id, a] of Object.entries(agents.entries)) out.push([id, a ?? {}]);
  } else if (Array.isArray(agents.list)) {
    for (const a of agents.list) if (a && typeof a.id === "string") out.push([a.id, a]);
  }
  if (!out.length) return ["main"];
  const marked = out.some(([, a]) => a?.default === true);
  const isDefault = (/** @type {[string, AgentEntry]} */ [id, a]) => (marked ? a?.default === true : normalizeAgentId(id) === "main");
  const ids = [...out.filter(isDefault), ...out.filter((e) => !isDefault(e))];
  return [...new Set(ids.map(([id]) => normalizeAgentId(id)))];
}

/**
 * OpenClaw's authorizeSearchHits policy for memindex. memindex keeps one index per
 * agent, so every hit a manager returns belongs to that manager's agent. A session
 * transcript hit is shown only to that same agent, and never into a sandboxed run;
 * memory-file hits are not restricted. A requester whose session key names no agent
 * gets no transcript hits (fail closed, as OpenClaw does without this hook).
 * @template {{ source?: string }} H
 * @param {{ agentId?: string, requesterSessionKey?: string, sandboxed?: boolean, hits: H[] }} params
 * @returns {H[]}
 */
export function authorizeHits({ agentId, requesterSessionKey, sandboxed, hits }) {
  if (!Array.isArray(hits)) return [];
  if (!hits.some((h) => h?.source === "sessions")) return hits;
  const owner = typeof agentId === "string" && agentId.trim() ? normalizeAgentId(agentId) : "";
  const requester = requesterSessionKey ? sessionKeyAgent(requesterSessionKey) : owner;
  const allowed = Boolean(owner) && !sandboxed && requester === owner;
  return allowed ? hits : hits.filter((h) => h?.source !== "sessions");
}
