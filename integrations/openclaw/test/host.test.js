// @ts-check
// src/host.js against stand-in OpenClaw packages in a temporary folder: a release it
// was checked against, one it was not, and broken installs (a file missing, one
// lacking an export, one that throws, one that never finishes loading, no SDK). Each
// is a clear `problem`, never a throw or a wait. (The real OpenClaw 2026.9.6:
// tests/openclaw/test_openclaw_parity.py.)
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";

import { recordRecalls } from "../src/dreaming.js";
import { TESTED, importHostSdk, loadInternals, openclawInternals, resetHost, setHostLogger } from "../src/host.js";

/** @import { InternalFiles } from "../src/host.js" */

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "mi-host-")));
const [CHECKED] = Object.keys(TESTED);
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/**
 * A stand-in OpenClaw package: its package.json (self-referenced by name, as the real
 * one is), an openclaw.mjs entry, SDK modules and memory-core's internal files.
 * @param {string} name
 * @param {{ version?: string | null, sdk?: Record<string, string>, files?: Record<string, string | null> }} spec
 *   `files`: by TESTED key, a module's text (null: no file); the rest export what TESTED lists
 */
function fakeHost(name, { version = CHECKED, sdk = {}, files = {} } = {}) {
  const root = path.join(tmp, name);
  fs.mkdirSync(path.join(root, "dist", "plugin-sdk"), { recursive: true });
  const pkg = {
    name: "openclaw",
    type: "module",
    ...(version === null ? {} : { version }),
    exports: { "./plugin-sdk/*": "./dist/plugin-sdk/*.js" },
  };
  fs.writeFileSync(path.join(root, "package.json"), JSON.stringify(pkg));
  fs.writeFileSync(path.join(root, "openclaw.mjs"), "");
  const sdkFiles = { "memory-host-core": "export function listMemoryHostPublicArtifacts() { return []; }", ...sdk };
  for (const [module, text] of Object.entries(sdkFiles))
    fs.writeFileSync(path.join(root, "dist", "plugin-sdk", `${module}.js`), text);
  /** @type {InternalFiles} */
  const checked = TESTED[CHECKED];
  for (const [key, { file, exports }] of Object.entries(checked)) {
    const text = key in files ? files[key] : exports.map((e) => `export function ${String(e)}() {}`).join("\n");
    if (text !== null) fs.writeFileSync(path.join(root, "dist", file), text);
  }
  return root;
}

/** The file of a TESTED internal, for the messages. @param {keyof InternalFiles} key */
const fileOf = (key) => TESTED[CHECKED][key].file;

test("a checked release: every internal is loaded, with the exports memindex calls", async () => {
  const got = await loadInternals(fakeHost("checked"));
  assert.equal(got.problem, null);
  assert.equal(got.version, CHECKED);
  assert.equal(typeof got.modules?.intents.matchStandingIntents, "function");
  assert.equal(typeof got.modules?.recall.recordShortTermRecalls, "function");
});

test("a release not in TESTED: nothing is loaded, and the problem names both releases", async () => {
  const got = await loadInternals(fakeHost("newer", { version: "2099.1.1" }));
  assert.equal(got.modules, null);
  assert.equal(got.version, "2099.1.1");
  assert.match(got.problem ?? "", new RegExp(`^OpenClaw 2099\\.1\\.1 is not a release memindex was checked against \\(.*${CHECKED}`));
  const none = await loadInternals(fakeHost("unversioned", { version: null }));
  assert.match(none.problem ?? "", /no version in its package\.json/);
});

test("a broken install of a checked release: the file and what is wrong with it", async () => {
  const missing = await loadInternals(fakeHost("missing", { files: { intentTool: null } }));
  assert.equal(missing.modules, null);
  assert.equal(missing.problem, `OpenClaw ${CHECKED}'s ${fileOf("intentTool")} is missing (a changed or incomplete install?)`);
  const lacking = await loadInternals(
    fakeHost("lacking", { files: { intents: "export function matchStandingIntents() {}\nexport const sweepStandingIntents = 1;" } }),
  );
  assert.equal(lacking.modules, null);
  assert.match(lacking.problem ?? "", new RegExp(`${fileOf("intents")} has no isEligibleStandingIntentTurn, buildStandingIntentContext, sweepStandingIntents$`));
  const throwing = await loadInternals(fakeHost("throwing", { files: { recall: 'throw new Error("boom at load");' } }));
  assert.equal(throwing.modules, null);
  assert.match(throwing.problem ?? "", new RegExp(`${fileOf("recall")} did not load: boom at load$`));
});

test("a module that never finishes loading is given up on at the deadline", async () => {
  const root = fakeHost("stalled", { files: { dreamingState: "await new Promise(() => {});\nexport const x = 1;" } });
  const t0 = Date.now();
  const got = await loadInternals(root, { deadlineMs: 200 });
  assert.ok(Date.now() - t0 < 5000);
  assert.equal(got.modules, null);
  assert.match(got.problem ?? "", new RegExp(`${fileOf("dreamingState")} did not finish loading within 0\\.2 s$`));
  assert.equal(got.late, true);
});

/**
 * Run `fn` as a gateway started from `root`'s openclaw.mjs (how host.js finds a host
 * that is not in the plugin's node_modules), with fresh host state.
 * @template T
 * @param {string} entry
 * @param {() => Promise<T>} fn
 * @param {number} [deadlineMs]
 * @returns {Promise<T>}
 */
async function asHost(entry, fn, deadlineMs = 2000) {
  const saved = process.argv[1];
  process.argv[1] = entry;
  resetHost({ deadlineMs });
  try {
    return await fn();
  } finally {
    process.argv[1] = saved;
    resetHost();
    setHostLogger(null);
  }
}

test("the running host found by its entry point: the SDK and the internals, once", async () => {
  const root = fakeHost("running", {
    sdk: { "session-visibility": "export function createAgentToAgentPolicy() { return {}; }" },
  });
  await asHost(path.join(root, "openclaw.mjs"), async () => {
    const core = await importHostSdk("memory-host-core", ["listMemoryHostPublicArtifacts"]);
    assert.equal(core.problem, null);
    assert.deepEqual(await core.mod?.listMemoryHostPublicArtifacts({ cfg: {} }), []);
    const got = await openclawInternals();
    assert.equal(got.problem, null);
    assert.equal(await openclawInternals(), got); // loaded once
    // an SDK module without a function the caller needs is reported, not returned
    const vis = await importHostSdk("session-visibility", ["createAgentToAgentPolicy", "createSessionVisibilityGuard"]);
    assert.equal(vis.mod, null);
    assert.match(vis.problem ?? "", new RegExp(`^openclaw/plugin-sdk/session-visibility of OpenClaw ${CHECKED.replace(/\./g, "\\.")} has no createSessionVisibilityGuard$`));
    assert.notEqual((await importHostSdk("session-visibility")).mod, null);
  });
});

test("a module slower than the deadline is reported, then found by the next caller", async () => {
  const exports = TESTED[CHECKED].dreamingState.exports.map((e) => `export function ${e}() {}`).join("\n");
  const slow = `await new Promise((r) => setTimeout(r, 400));\n${exports}`;
  const root = fakeHost("running-slow", { files: { dreamingState: slow } });
  await asHost(
    path.join(root, "openclaw.mjs"),
    async () => {
      const first = await openclawInternals();
      assert.equal(first.modules, null);
      assert.match(first.problem ?? "", /did not finish loading within 0\.2 s$/);
      await new Promise((r) => setTimeout(r, 600));
      const next = await openclawInternals();
      assert.equal(next.problem, null);
      assert.equal(typeof next.modules?.dreamingState.openMemoryCoreStateStore, "function");
    },
    200,
  );
});

test("a release not in TESTED at run time: dreaming is not fed, said once, nothing thrown", async () => {
  const root = fakeHost("running-newer", { version: "2099.1.1" });
  /** @type {string[]} */
  const warned = [];
  const logger = { info() {}, error() {}, warn: (/** @type {string} */ m) => warned.push(m) };
  await asHost(path.join(root, "openclaw.mjs"), async () => {
    const got = await openclawInternals();
    assert.equal(got.modules, null);
    assert.match(got.problem ?? "", /OpenClaw 2099\.1\.1 is not a release memindex was checked against/);
    const hits = [{ path: "memory/2026-11-01.md", startLine: 1, endLine: 1, score: 1, snippet: "x", source: /** @type {const} */ ("memory") }];
    const params = { workspaceDir: tmp, query: "q", hits, logger };
    assert.equal(await recordRecalls(params), false);
    assert.equal(await recordRecalls(params), false);
  });
  assert.equal(warned.length, 1);
  assert.match(warned[0], /^memindex: dreaming is not fed with memindex's recalls: OpenClaw 2099\.1\.1 is not a release/);
});

test("no OpenClaw at all: each SDK module and the internals are a problem, logged once each", async () => {
  /** @type {string[]} */
  const warned = [];
  await asHost(path.join(tmp, "nowhere", "openclaw.mjs"), async () => {
    setHostLogger({ info() {}, error() {}, warn: (m) => warned.push(m) });
    const first = await importHostSdk("memory-core-host-runtime-core");
    assert.equal(first.mod, null);
    assert.match(first.problem ?? "", /^openclaw\/plugin-sdk\/memory-core-host-runtime-core: /);
    await importHostSdk("memory-core-host-runtime-core");
    const got = await openclawInternals();
    assert.equal(got.modules, null);
    assert.match(got.problem ?? "", /^openclaw\/plugin-sdk\/memory-host-core: /);
  });
  assert.equal(warned.length, 2, warned.join("\n"));
  assert.ok(warned.every((w) => w.startsWith("memindex: OpenClaw's own openclaw/plugin-sdk/")));
});
