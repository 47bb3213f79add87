// @ts-check
// The memory files the slot owner lists for OpenClaw's public-artifact consumers
// (memory-wiki's bridge mode): each agent's MEMORY.md and memory/**/*.md, as
// memory-core lists them.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { configuredAgents, normalizeAgentId } from "./agents.js";
import { importHostSdk } from "./host.js";

/** @import { AgentEntry, HostSdk, MemoryPluginPublicArtifact, OpenClawConfig } from "../types/host.js" */

const MAX_FILES = 5000;

/**
 * @param {OpenClawConfig | undefined} cfg
 * @returns {Map<string, string[]>} workspace -> agent ids
 */
function agentWorkspaces(cfg) {
  const agents = cfg?.agents ?? {};
  /** @type {Map<string, AgentEntry>} */
  const byId = new Map();
  /** @type {[string | undefined, AgentEntry][]} */
  const entries =
    agents.entries && typeof agents.entries === "object" && !Array.isArray(agents.entries)
      ? Object.entries(agents.entries)
      : (Array.isArray(agents.list) ? agents.list : []).map((a) => [a?.id, a]);
  for (const [id, a] of entries) if (typeof id === "string") byId.set(normalizeAgentId(id), a ?? {});
  const fallback = agents.defaults?.workspace ?? "~/.openclaw/workspace";
  /** @type {Map<string, string[]>} workspace -> agent ids */
  const out = new Map();
  for (const id of configuredAgents(cfg)) {
    let ws = byId.get(id)?.workspace ?? fallback;
    if (typeof ws !== "string") continue;
    if (ws.startsWith("~/")) ws = path.join(process.env.HOME || os.homedir(), ws.slice(2));
    out.set(ws, [...(out.get(ws) ?? []), id]);
  }
  return out;
}

/**
 * @param {string} dir
 * @param {string} rel
 * @param {string[]} found
 */
function markdownUnder(dir, rel, found) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    if (found.length >= MAX_FILES || e.name.startsWith(".") || e.name === "node_modules") continue;
    const sub = `${rel}/${e.name}`;
    if (e.isDirectory()) markdownUnder(path.join(dir, e.name), sub, found);
    else if (e.isFile() && e.name.toLowerCase().endsWith(".md")) found.push(sub);
  }
}

/**
 * OpenClaw's MemoryPluginPublicArtifactsProvider.listArtifacts: the host's own list
 * (the SDK's listMemoryHostPublicArtifacts, as memory-core gives it: MEMORY.md, the
 * daily notes, dream reports and the memory host's event log), else memindex's.
 * @param {{ cfg?: OpenClawConfig }} [params]
 * @param {() => Promise<{ mod: Partial<HostSdk["memory-host-core"]> | null }>} [load]
 * @returns {Promise<MemoryPluginPublicArtifact[]>}
 */
export async function listArtifacts(params = {}, load = () => importHostSdk("memory-host-core")) {
  const { mod } = await load();
  if (typeof mod?.listMemoryHostPublicArtifacts === "function") {
    return mod.listMemoryHostPublicArtifacts({ cfg: params.cfg ?? {} });
  }
  return ownArtifacts(params);
}

/**
 * MEMORY.md and memory/**\/*.md of each agent's workspace, when the host's list is not there.
 * @param {{ cfg?: OpenClawConfig }} [params]
 * @returns {Promise<MemoryPluginPublicArtifact[]>}
 */
export async function ownArtifacts({ cfg } = {}) {
  /** @type {MemoryPluginPublicArtifact[]} */
  const out = [];
  for (const [workspaceDir, agentIds] of agentWorkspaces(cfg)) {
    const files = [];
    if (fs.existsSync(path.join(workspaceDir, "MEMORY.md"))) files.push("MEMORY.md");
    markdownUnder(path.join(workspaceDir, "memory"), "memory", files);
    for (const relativePath of files) {
      const kind =
        relativePath === "MEMORY.md"
          ? "memory-root"
          : relativePath.startsWith("memory/dreaming/")
            ? "dream-report"
            : "daily-note";
      out.push({
        kind,
        workspaceDir,
        relativePath,
        absolutePath: path.join(workspaceDir, relativePath),
        agentIds,
        contentType: "markdown",
      });
    }
  }
  return out;
}
