// Agent ids and who may see a session-transcript hit.

/** The agent named by an OpenClaw session key (`agent:<id>:...`), else undefined. */
export function sessionKeyAgent(sessionKey) {
  const m = /^agent:([^:]+):/i.exec(typeof sessionKey === "string" ? sessionKey.trim() : "");
  return m ? m[1].toLowerCase() : undefined;
}

/** The agent ids an openclaw.json configures, the default agent first. */
export function configuredAgents(cfg) {
  const agents = cfg?.agents ?? {};
  const out = [];
  if (Array.isArray(agents.list)) {
    for (const a of agents.list) if (a && typeof a.id === "string") out.push([a.id, a]);
  }
  if (agents.entries && typeof agents.entries === "object") {
    for (const [id, a] of Object.entries(agents.entries)) out.push([id, a ?? {}]);
  }
  if (!out.length) return ["main"];
  const isDefault = ([id, a]) => (a?.default ?? id === "main") === true;
  const ids = [...out.filter(isDefault), ...out.filter((e) => !isDefault(e))].map(([id]) => id);
  return [...new Set(ids)];
}

/**
 * OpenClaw's authorizeSearchHits policy for memindex. memindex keeps one index per
 * agent, so every hit a manager returns belongs to that manager's agent. A session
 * transcript hit is shown only to that same agent, and never into a sandboxed run;
 * memory-file hits are not restricted. A requester whose session key names no agent
 * gets no transcript hits (fail closed, as OpenClaw does without this hook).
 */
export function authorizeHits({ agentId, requesterSessionKey, sandboxed, hits }) {
  if (!Array.isArray(hits)) return [];
  if (!hits.some((h) => h?.source === "sessions")) return hits;
  const owner = typeof agentId === "string" ? agentId.trim().toLowerCase() : "";
  const requester = requesterSessionKey ? sessionKeyAgent(requesterSessionKey) : owner;
  const allowed = Boolean(owner) && !sandboxed && requester === owner;
  return allowed ? hits : hits.filter((h) => h?.source !== "sessions");
}
