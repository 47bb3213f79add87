// The plugin's settings: plugins.entries.memindex.config, with defaults.
import path from "node:path";

import { defaultSocket, openclawConfigPath, openclawStateDir } from "./daemon.js";

function posInt(value, fallback, max) {
  return Number.isInteger(value) && value > 0 && value <= max ? value : fallback;
}

function expand(p, env) {
  if (typeof p !== "string" || !p.trim()) return undefined;
  const home = env.HOME ?? "";
  return p.startsWith("~/") ? path.join(home, p.slice(2)) : p;
}

/** Settings from the plugin's config object (may be undefined) and the environment. */
export function resolveSettings(pluginConfig, env = process.env) {
  const c = pluginConfig && typeof pluginConfig === "object" ? pluginConfig : {};
  const stateDir = openclawStateDir(env);
  return {
    command: c.command ?? env.MEMINDEX_COMMAND ?? "memindex",
    socket: expand(c.socket, env) ?? expand(env.MEMINDEX_SOCKET, env) ?? defaultSocket(env),
    openclawConfig: expand(c.openclawConfig, env) ?? openclawConfigPath(env),
    autoStart: c.autoStart !== false,
    // OpenClaw's memory search deadline is 30 s by default: answer (or fail readably) well before.
    timeoutMs: posInt(c.timeoutMs, 8_000, 600_000),
    startTimeoutMs: posInt(c.startTimeoutMs, 20_000, 600_000),
    reindexTimeoutMs: posInt(c.reindexTimeoutMs, 600_000, 86_400_000),
    pingTimeoutMs: 2_000,
    logFile: expand(c.logFile, env) ?? path.join(stateDir, "logs", "memindex.log"),
  };
}
