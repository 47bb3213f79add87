// @ts-check
// Finding the memindex daemon, and starting it for this gateway when none answers.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { MemindexError, call } from "./rpc.js";

/** @import { Settings } from "./settings.js" */

/**
 * OpenClaw's state dir, as OpenClaw resolves it.
 * @param {NodeJS.ProcessEnv} [env]
 */
export function openclawStateDir(env = process.env) {
  if (env.OPENCLAW_STATE_DIR?.trim()) return env.OPENCLAW_STATE_DIR;
  const home = env.OPENCLAW_HOME?.trim() || env.HOME || os.homedir();
  return path.join(home, ".openclaw");
}

/**
 * The gateway's openclaw.json, as OpenClaw resolves it.
 * @param {NodeJS.ProcessEnv} [env]
 */
export function openclawConfigPath(env = process.env) {
  if (env.OPENCLAW_CONFIG_PATH?.trim()) return env.OPENCLAW_CONFIG_PATH;
  return path.join(openclawStateDir(env), "openclaw.json");
}

/**
 * memindex's default socket: $XDG_RUNTIME_DIR/memindex.sock, else in its state dir.
 * @param {NodeJS.ProcessEnv} [env]
 */
export function defaultSocket(env = process.env) {
  if (env.XDG_RUNTIME_DIR?.trim()) return path.join(env.XDG_RUNTIME_DIR, "memindex.sock");
  const home = env.HOME || os.homedir();
  let state;
  if (env.XDG_STATE_HOME?.trim()) state = path.join(env.XDG_STATE_HOME, "memindex");
  else if (process.platform === "darwin")
    state = path.join(home, "Library", "Application Support", "memindex");
  else state = path.join(home, ".local", "state", "memindex");
  return path.join(state, "memindex.sock");
}

/**
 * @param {unknown} command
 * @returns {string[]}
 */
function commandWords(command) {
  if (Array.isArray(command) && command.length && command.every((w) => typeof w === "string"))
    return command;
  if (typeof command === "string" && command.trim()) return command.trim().split(/\s+/);
  return ["memindex"];
}

/**
 * @param {string} file
 * @param {number} [max]
 */
function tail(file, max = 1200) {
  try {
    const text = fs.readFileSync(file, "utf8");
    return text.slice(-max).trim();
  } catch {
    return "";
  }
}

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));
/** @typedef {{ started: boolean, version?: string, pid?: number }} DaemonStart */
/** @type {Map<string, Promise<DaemonStart>>} socket -> its start, so one process starts one daemon */
const starting = new Map();

/**
 * Make sure a daemon answers on `settings.socket`; start `memindex serve` for the
 * gateway's openclaw.json when none does (unless autoStart is off). Resolves to
 * {started, version}; rejects within `startTimeoutMs` with a MemindexError naming
 * memindex and what to do.
 * @param {Settings} settings
 * @returns {Promise<DaemonStart>}
 */
export async function ensureDaemon(settings) {
  try {
    const pong = await call(settings.socket, "ping", {}, { timeoutMs: settings.pingTimeoutMs });
    return { started: false, version: pong?.version };
  } catch (err) {
    if (!(err instanceof MemindexError) || err.code !== "daemon_unavailable") throw err;
  }
  if (!settings.autoStart) {
    throw new MemindexError(
      `no memindex daemon answers at ${settings.socket}, and autoStart is off; start it with ` +
        `\`memindex --openclaw-config ${settings.openclawConfig} serve --socket ${settings.socket}\``,
      "daemon_unavailable",
    );
  }
  let pending = starting.get(settings.socket);
  if (!pending) {
    pending = start(settings).finally(() => starting.delete(settings.socket));
    starting.set(settings.socket, pending);
  }
  return pending;
}

/**
 * A path on /proc, /sys or /dev: never a place for a log or a socket.
 * @param {unknown} p
 */
export function onKernelFs(p) {
  const abs = path.resolve(String(p ?? ""));
  return ["/proc", "/sys", "/dev"].some((root) => abs === root || abs.startsWith(`${root}/`));
}

/**
 * @param {Settings} settings
 * @returns {Promise<DaemonStart>}
 */
async function start(settings) {
  const words = commandWords(settings.command);
  const args = [
    ...words.slice(1),
    "--openclaw-config",
    settings.openclawConfig,
    "serve",
    "--socket",
    settings.socket,
  ];
  for (const [what, p] of [["logFile", settings.logFile], ["socket", settings.socket]]) {
    if (onKernelFs(p)) {
      throw new MemindexError(`memindex's ${what} ${p} is on a kernel file system: choose another path`, "bad_setting");
    }
  }
  // never a synchronous recursive mkdir on the gateway's event loop
  await fs.promises.mkdir(path.dirname(settings.logFile), { recursive: true });
  await fs.promises.mkdir(path.dirname(settings.socket), { recursive: true });
  const log = fs.openSync(settings.logFile, "a");
  /** @type {MemindexError | null} */
  let failure = null;
  /** @type {import("node:child_process").ChildProcess} */
  let child;
  try {
    child = spawn(words[0], args, {
      detached: true,
      stdio: ["ignore", log, log],
      env: process.env,
    });
  } finally {
    fs.closeSync(log);
  }
  child.on("error", (/** @type {NodeJS.ErrnoException} */ err) => {
    failure =
      err.code === "ENOENT"
        ? new MemindexError(
            `memindex is not installed: \`${words[0]}\` was not found on PATH. Install it ` +
              `(see its README) or set plugins.entries.memindex.config.command`,
            "not_installed",
          )
        : new MemindexError(`could not start memindex (${words[0]}): ${err.message}`, "start");
  });
  child.on("exit", (code, sig) => {
    failure ??= new MemindexError(
      `memindex serve exited (${sig ?? `code ${code}`}) before answering on ${settings.socket}: ` +
        (tail(settings.logFile) || "no output") +
        ` (log: ${settings.logFile})`,
      "start",
    );
  });
  child.unref();
  const deadline = Date.now() + settings.startTimeoutMs;
  while (Date.now() < deadline) {
    if (failure) throw failure;
    try {
      const left = Math.max(200, Math.min(2_000, deadline - Date.now()));
      const pong = await call(settings.socket, "ping", {}, { timeoutMs: left });
      return { started: true, version: pong?.version, pid: child.pid };
    } catch (err) {
      if (!(err instanceof MemindexError) || (err.code !== "daemon_unavailable" && err.code !== "timeout")) throw err;
    }
    await sleep(100);
  }
  if (failure) throw failure;
  throw new MemindexError(
    `memindex serve (pid ${child.pid}) did not answer on ${settings.socket} within ` +
      `${(settings.startTimeoutMs / 1000).toFixed(0)} s; see ${settings.logFile}`,
    "start",
  );
}
