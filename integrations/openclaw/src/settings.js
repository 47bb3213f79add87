// @ts-check
// The plugin's settings: plugins.entries.memindex.config, with defaults.
import path from "node:path";

import { defaultSocket, openclawConfigPath, openclawStateDir } from "./daemon.js";

/** @import { PluginConfig } from "../types/host.js" */

/**
 * @typedef {object} Settings
 * @property {string | string[]} command the memindex executable (or its words)
 * @property {string} socket
 * @property {string} openclawConfig
 * @property {boolean} autoStart
 * @property {number} timeoutMs
 * @property {number} startTimeoutMs
 * @property {number} reindexTimeoutMs
 * @property {number} pingTimeoutMs
 * @property {string} logFile
 * @property {string} [userTimezone] OpenClaw's agents.defaults.userTimezone, when set
 */

/**
 * @param {unknown} value
 * @param {number} fallback
 * @param {number} max
 */
function posInt(value, fallback, max) {
  return typeof value === "number" && Number.isInteger(value) && value > 0 && value <= max ? value : fallback;
}

/**
 * @param {unknown} p
 * @param {NodeJS.ProcessEnv} env
 */
function expand(p, env) {
  if (typeof p !== "string" || !p.trim()) return undefined;
  const home = env.HOME ?? "";
  return p.startsWith("~/") ? path.join(home, p.slice(2)) : p;
}

/**
 * Settings from the plugin's config object (may be undefined) and the environment.
 * @param {PluginConfig | undefined} pluginConfig
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {Settings}
 */
export function resolveSettings(pluginConfig, env = process.env) {
  /** @type {PluginConfig} */
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
