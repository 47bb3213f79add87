// @ts-check
// The host: the one module of the plugin that loads anything of OpenClaw's own (the
// other modules get it from here; tests/openclaw/test_plugin_types.py checks that).
// Two kinds of module, both the running gateway's copy (the same module instances,
// the same state stores), and each returned as `{ mod | modules, problem }`, never
// thrown and never waited on past LOAD_DEADLINE_MS:
//
// * the plugin SDK, `openclaw/plugin-sdk/<name>` (importHostSdk): OpenClaw's public
//   surface. The plugin declares `openclaw` as a peer dependency, so an npm-managed
//   install has node_modules/openclaw linked to the host; a plugin installed from a
//   folder or a tarball may not, and then the SDK is resolved from the package the
//   running process was started from (its `openclaw.mjs`), by the package's own name
//   (self-reference through its `exports`).
// * parts of memory-core the SDK does not export (openclawInternals), loaded by file
//   from the installed package, and only on the releases in TESTED:
//   - dreaming's recall signals: memory-core's memory_search records each recall in
//     its short-term recall store (`recordShortTermRecalls`), and the nightly
//     promotion into MEMORY.md ranks by them; with memindex answering the searches
//     the store stayed empty (OpenClaw 2026.9.6 has no supported way for another
//     plugin to feed it: no SDK export, and its memory host events are not read as
//     signals); and the store of dreaming's state it is kept in;
//   - standing intents: the `intent` tool and the matcher that injects an armed
//     intent (memory-core registers both; denying memory-core's tools denies
//     `intent` too, and with dreaming off memory-core is not loaded at all).
//   On any other release (their files have other hashed names there, and may do
//   other things) nothing is loaded and `problem` says which release this is and
//   which were checked; a listed file that is missing, fails to load, lacks an
//   export memindex calls, or does not finish loading is named the same way.
//
// The shapes of both are declared in types/host.d.ts.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** @import { HostInternals, HostSdk, HostSdkName, PluginLogger } from "../types/host.js" */

/**
 * @typedef {{ [K in keyof HostInternals]: { file: string, exports: (keyof HostInternals[K])[] } }} InternalFiles
 * @typedef {object} Internals
 * @property {string | null} version the running OpenClaw's
 * @property {HostInternals | null} modules
 * @property {string | null} problem why `modules` is null
 * @property {boolean} [late] a module had not finished loading at the deadline (it
 *   may since: the next openclawInternals() looks again)
 */

/**
 * The OpenClaw releases memindex's use of memory-core's internals was checked against
 * (tests/openclaw/test_openclaw_parity.py, on the real gateway): for each release,
 * each internal's file under the package's dist/ and the exports memindex calls.
 * @type {Readonly<Record<string, InternalFiles>>}
 */
export const TESTED = {
  "2026.9.6": {
    recall: { file: "short-term-promotion-record-DC24HXjB.mjs", exports: ["recordShortTermRecalls"] },
    intents: {
      file: "standing-intents-DCNg_exD.mjs",
      exports: [
        "isEligibleStandingIntentTurn",
        "matchStandingIntents",
        "buildStandingIntentContext",
        "sweepStandingIntents",
      ],
    },
    intentTool: { file: "standing-intents-tool-Cl5KQktW.mjs", exports: ["createStandingIntentTool"] },
    dreamingState: {
      file: "dreaming-state-GgIReYWB.mjs",
      exports: ["openMemoryCoreStateStore", "configureMemoryCoreDreamingState"],
    },
  },
};

/** How long a module of the host may take to load before it is reported as not loaded. */
export const LOAD_DEADLINE_MS = 30_000;

/** @type {Map<string, Promise<{ mod: any, problem: string | null, late?: boolean }>>} */
const sdkCache = new Map();
/** @type {Promise<Internals> | null} */
let internals = null;
let deadlineMs = LOAD_DEADLINE_MS;
/** @type {PluginLogger | null} */
let logger = null;
const warned = new Set();

/**
 * Where a module of the host that cannot be loaded is reported (once each).
 * @param {PluginLogger | null | undefined} log
 */
export function setHostLogger(log) {
  logger = log ?? null;
}

/** @param {string} problem */
function warnOnce(problem) {
  if (warned.has(problem)) return;
  warned.add(problem);
  logger?.warn?.(`memindex: OpenClaw's own ${problem}; memindex keeps to its stricter rules`);
}

/** @param {unknown} err */
function reason(err) {
  return err instanceof Error ? err.message : String(err);
}

/** A module that did not finish loading in time (it may still, later). */
class LateError extends Error {}

/**
 * `promise`, or a LateError once `ms` have passed (the timer keeps no process alive).
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @returns {Promise<T>}
 */
function withDeadline(promise, ms) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new LateError(`did not finish loading within ${ms / 1000} s`)), ms);
    timer.unref();
  });
  return /** @type {Promise<T>} */ (Promise.race([promise, deadline])).finally(() => clearTimeout(timer));
}

/** @param {string} specifier */
function fromHostEntry(specifier) {
  const entry = process.argv[1];
  if (!entry) throw new Error("no host entry point");
  // a bin symlink (/usr/local/bin/openclaw) resolves to the package's own file
  const require = createRequire(fs.realpathSync(path.resolve(entry)));
  return pathToFileURL(require.resolve(specifier)).href;
}

/**
 * The file URL of `openclaw/plugin-sdk/<name>` in the running OpenClaw, or null.
 * @param {string} name
 */
function resolveHostSdk(name) {
  const specifier = `openclaw/plugin-sdk/${name}`;
  try {
    return import.meta.resolve(specifier);
  } catch {
    try {
      return fromHostEntry(specifier);
    } catch {
      return null;
    }
  }
}

/** @param {string} name */
function loadSdk(name) {
  let pending = sdkCache.get(name);
  if (!pending) {
    const specifier = `openclaw/plugin-sdk/${name}`;
    const loading = import(specifier).catch(() => import(fromHostEntry(specifier)));
    pending = withDeadline(loading, deadlineMs).then(
      (mod) => ({ mod, problem: null }),
      (err) => ({ mod: null, problem: `${specifier}: ${reason(err)}`, late: err instanceof LateError }),
    );
    // a module that loads after its deadline is there for the next caller
    const late = loading.then((mod) => ({ mod, problem: null }));
    late.then((got) => sdkCache.get(name) === pending && sdkCache.set(name, Promise.resolve(got)), () => {});
    sdkCache.set(name, pending);
  }
  return pending;
}

/**
 * `openclaw/plugin-sdk/<name>` of the running OpenClaw, or null with the reason
 * (logged once) when it cannot be loaded or lacks one of the exports in `needs`.
 * @template {HostSdkName} K
 * @param {K} name
 * @param {readonly (keyof HostSdk[K] & string)[]} [needs] exports the caller calls
 *   without a fallback of its own
 * @returns {Promise<{ mod: HostSdk[K] | null, problem: string | null, late?: boolean }>}
 *   `late`: the module had not finished loading at the deadline (the next call may find it)
 */
export async function importHostSdk(name, needs = []) {
  const got = await loadSdk(name);
  if (!got.mod) {
    warnOnce(/** @type {string} */ (got.problem));
    return { mod: null, problem: got.problem, ...(got.late ? { late: true } : {}) };
  }
  const missing = needs.filter((n) => typeof got.mod[n] !== "function");
  if (!missing.length) return { mod: got.mod, problem: null };
  const problem =
    `openclaw/plugin-sdk/${name} of OpenClaw ${hostVersion(hostRoot()) ?? "?"} has no ` +
    `${missing.join(", ")}`;
  warnOnce(problem);
  return { mod: null, problem };
}

/** The folder of the running OpenClaw package (<root>/dist/plugin-sdk/*.js), or null. */
function hostRoot() {
  const resolved = resolveHostSdk("memory-host-core");
  if (!resolved?.startsWith("file:")) return null;
  return path.resolve(path.dirname(fileURLToPath(resolved)), "..", "..");
}

/**
 * The version in <root>/package.json, or null.
 * @param {string | null} root
 * @returns {string | null}
 */
function hostVersion(root) {
  if (!root) return null;
  try {
    const version = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version;
    return typeof version === "string" ? version : null;
  } catch {
    return null;
  }
}

/**
 * A module of the host's own package, by its file. Imported from memindex's code
 * directly, OpenClaw 2026.9 takes a file outside the plugin for a dependency of the
 * plugin and copies the host's whole package into the plugin's generation artifact
 * first, on the gateway's thread (16-21 s here, during which the gateway answers
 * nothing). A module made of one re-export is not the plugin's code: the host's file
 * loads as the host loads it, the same module instance, in milliseconds.
 * @param {string} file
 * @returns {Promise<Record<string, unknown>>}
 */
function importHostFile(file) {
  const url = pathToFileURL(file).href;
  return import(`data:text/javascript,export * from ${JSON.stringify(url)};`);
}

/**
 * memory-core's internals in the OpenClaw package at `root`, when its version is in
 * TESTED: `{ version, modules, problem }`, with `modules` null and the reason in
 * `problem` when they cannot be used. Never throws.
 * @param {string} root
 * @param {{ deadlineMs?: number }} [opts]
 * @returns {Promise<Internals>}
 */
export async function loadInternals(root, { deadlineMs: ms = deadlineMs } = {}) {
  const version = hostVersion(root);
  const files = version === null ? undefined : TESTED[version];
  if (!files) {
    const checked = Object.keys(TESTED).join(", ");
    const which = version === null ? `OpenClaw at ${root} (no version in its package.json)` : `OpenClaw ${version}`;
    return {
      version,
      modules: null,
      problem: `${which} is not a release memindex was checked against (${checked})`,
    };
  }
  /** @type {Record<string, unknown>} */
  const modules = {};
  for (const [key, { file, exports }] of Object.entries(files)) {
    const fail = (/** @type {string} */ why, late = false) => ({
      version,
      modules: null,
      problem: `OpenClaw ${version}'s ${file} ${why}`,
      ...(late ? { late } : {}),
    });
    const full = path.join(root, "dist", file);
    if (!fs.existsSync(full)) return fail("is missing (a changed or incomplete install?)");
    let mod;
    try {
      mod = await withDeadline(importHostFile(full), ms);
    } catch (err) {
      if (err instanceof LateError) return fail(err.message, true);
      return fail(`did not load: ${reason(err)}`);
    }
    const missing = exports.filter((n) => typeof mod[n] !== "function");
    if (missing.length) return fail(`has no ${missing.join(", ")}`);
    modules[key] = mod;
  }
  return { version, modules: /** @type {HostInternals} */ (/** @type {unknown} */ (modules)), problem: null };
}

/**
 * memory-core's internals in the running OpenClaw (loaded once; asked again after an
 * answer that was only `late`): see loadInternals.
 * @returns {Promise<Internals>}
 */
export function openclawInternals() {
  if (internals) return internals;
  /** @type {Promise<Internals>} */
  const pending = (async () => {
    const { mod, problem, late } = await importHostSdk("memory-host-core");
    if (!mod) return { version: null, modules: null, problem, ...(late ? { late } : {}) };
    const root = hostRoot();
    if (!root) return { version: null, modules: null, problem: "no OpenClaw SDK found" };
    return loadInternals(root);
  })().catch((err) => ({ version: null, modules: null, problem: reason(err) }));
  internals = pending;
  pending.then((got) => {
    if (got.late && internals === pending) internals = null;
  });
  return pending;
}

/**
 * For tests: forget what was loaded (and, given, use another deadline).
 * @param {{ deadlineMs?: number }} [opts]
 */
export function resetHost({ deadlineMs: ms = LOAD_DEADLINE_MS } = {}) {
  sdkCache.clear();
  internals = null;
  warned.clear();
  deadlineMs = ms;
}
