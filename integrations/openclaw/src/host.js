// The host's own code: modules of the running OpenClaw's plugin SDK.
//
// The plugin declares `openclaw` as a peer dependency, so an npm-managed install has
// node_modules/openclaw linked to the host; a plugin installed from a folder or a
// tarball may not, and then the SDK is resolved from the package the running process
// was started from (its `openclaw.mjs`), by the package's own name (self-reference
// through its `exports`). Either way it is the gateway's copy: the same module
// instances, the same state stores.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const cache = new Map();
let logger = null;

/** Where a module of the host that cannot be loaded is reported (once each). */
export function setHostLogger(log) {
  logger = log;
}

function fromHostEntry(specifier) {
  const entry = process.argv[1];
  if (!entry) throw new Error("no host entry point");
  // a bin symlink (/usr/local/bin/openclaw) resolves to the package's own file
  const require = createRequire(fs.realpathSync(path.resolve(entry)));
  return pathToFileURL(require.resolve(specifier)).href;
}

/**
 * `openclaw/plugin-sdk/<name>` of the running OpenClaw, or null (with the reason in
 * `hostSdkProblem(name)`) when neither way finds it.
 */
export function importHostSdk(name) {
  let pending = cache.get(name);
  if (!pending) {
    const specifier = `openclaw/plugin-sdk/${name}`;
    pending = import(specifier)
      .catch(() => import(fromHostEntry(specifier)))
      .then(
        (mod) => ({ mod, problem: null }),
        (err) => {
          const problem = `${specifier}: ${err?.message ?? err}`;
          logger?.warn?.(`memindex: OpenClaw's own ${problem}; memindex keeps to its stricter rules`);
          return { mod: null, problem };
        },
      );
    cache.set(name, pending);
  }
  return pending;
}

/** The file URL of `openclaw/plugin-sdk/<name>` in the running OpenClaw, or null. */
export function resolveHostSdk(name) {
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

/** For tests: forget what was loaded. */
export function resetHostSdk() {
  cache.clear();
}
