// @ts-check
// classifyWorkspaceMemoryPaths: memory-core's rules (the real-gateway check is
// tests/openclaw/test_openclaw_parity.py: MEMORY.md and USER.md in the first turn's prompt).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { classifierState, classifyWorkspaceMemoryPaths } from "../src/provenance.js";

/** @import { ReadRecord, RecordReader } from "../src/provenance.js" */

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "mi-prov-")));
const ws = path.join(tmp, "ws");
const outside = path.join(tmp, "outside");
for (const dir of [ws, outside, `${ws}/memory/dreaming`, `${ws}/notes`, `${ws}/users/ann`])
  fs.mkdirSync(dir, { recursive: true });
for (const f of ["MEMORY.md", "USER.md", "DREAMS.md", "memory/2026-11-01.md",
  "memory/dreaming/light.md", "notes/todo.md", "users/ann/USER.md", "AGENTS.md"])
  fs.writeFileSync(path.join(ws, f), "- a note\n");
fs.writeFileSync(path.join(outside, "MEMORY.md"), "- planted\n");

/** @type {ReadRecord} */
const noRecords = async () => async () => undefined;

/**
 * @param {string[]} paths
 * @param {ReadRecord} [readRecord]
 * @param {object} [extra]
 */
async function classes(paths, readRecord = noRecords, extra = {}) {
  const out = await classifyWorkspaceMemoryPaths(
    { cfg: {}, agentId: "main", workspaceDir: ws, relativePaths: paths, ...extra },
    readRecord,
  );
  assert.deepEqual(out.map((c) => c.relativePath), paths);
  return Object.fromEntries(out.map((c) => [c.relativePath, c.originClass]));
}

test("workspace memory files are agent, dreaming output system, the rest untrusted", async () => {
  assert.deepEqual(
    await classes(["MEMORY.md", "USER.md", "memory/2026-11-01.md", "users/ann/USER.md",
      "DREAMS.md", "memory/dreaming/light.md", "notes/todo.md", "AGENTS.md", "missing.md"]),
    {
      "MEMORY.md": "agent",
      "USER.md": "agent",
      "memory/2026-11-01.md": "agent",
      "users/ann/USER.md": "agent",
      "DREAMS.md": "system",
      "memory/dreaming/light.md": "system",
      "notes/todo.md": "untrusted",
      "AGENTS.md": "untrusted",
      "missing.md": "untrusted",
    },
  );
});

test("a recorded provenance wins: a flush-downgraded file stays untrusted", async () => {
  /** @type {string[][]} */
  const seen = [];
  /** @type {ReadRecord} */
  const reader = async () => async ({ workspaceDir, relativePath }) => {
    seen.push([workspaceDir, relativePath]);
    return relativePath === "MEMORY.md" ? { originClass: "untrusted" } : undefined;
  };
  assert.deepEqual(await classes(["MEMORY.md", "USER.md"], reader), {
    "MEMORY.md": "untrusted",
    "USER.md": "agent",
  });
  assert.deepEqual(seen.sort(), [[ws, "MEMORY.md"], [ws, "USER.md"]]);
});

test("a symlink out of the workspace is untrusted, whatever its name", async () => {
  const link = fs.mkdtempSync(path.join(tmp, "ws-link-"));
  fs.symlinkSync(path.join(outside, "MEMORY.md"), path.join(link, "MEMORY.md"));
  const out = await classifyWorkspaceMemoryPaths(
    { workspaceDir: link, relativePaths: ["MEMORY.md"] },
    noRecords,
  );
  assert.equal(out[0].originClass, "untrusted");
});

test("pinned read sources: the canonical path decides; a missing or unclean one is untrusted", async () => {
  const readSources = [
    { relativePath: "MEMORY.md", canonicalRelativePath: "MEMORY.md" },
    { relativePath: "USER.md", canonicalRelativePath: "notes/todo.md" },
    { relativePath: "memory/a.md", canonicalRelativePath: "../memory/a.md" },
    { relativePath: "memory/b.md" },
    { relativePath: "memory/c.md", canonicalRelativePath: "memory/./c.md" },
  ];
  assert.deepEqual(
    await classes(["MEMORY.md", "USER.md", "memory/a.md", "memory/b.md", "memory/c.md",
      "memory/d.md"], noRecords, { readSources }),
    {
      "MEMORY.md": "agent", // not probed on disk: the pinned source is enough
      "USER.md": "untrusted",
      "memory/a.md": "untrusted",
      "memory/b.md": "untrusted",
      "memory/c.md": "untrusted",
      "memory/d.md": "untrusted",
    },
  );
});

test("no provenance reader: workspace memory fails closed, and the reason is kept", async () => {
  classifierState.problem = null;
  /** @type {ReadRecord} */
  const missing = async () => ({ problem: "openclaw/plugin-sdk/x: not found" });
  assert.deepEqual(await classes(["MEMORY.md", "DREAMS.md"], missing), {
    "MEMORY.md": "untrusted",
    "DREAMS.md": "system",
  });
  assert.match(classifierState.problem ?? "", /not found/);
  classifierState.problem = null;
  /** @type {ReadRecord} */
  const broken = async () => async () => {
    throw new Error("store locked");
  };
  assert.deepEqual(await classes(["USER.md"], broken), { "USER.md": "untrusted" });
  assert.match(classifierState.problem ?? "", /store locked/);
  classifierState.problem = null;
});

test("a file downgraded under another name (a hard link, a symlinked log) stays untrusted", async () => {
  const w = fs.mkdtempSync(path.join(tmp, "ws-links-"));
  fs.mkdirSync(path.join(w, "memory"));
  fs.writeFileSync(path.join(w, "MEMORY.md"), "- curated\n");
  fs.writeFileSync(path.join(w, "memory/2026-11-02.md"), "- a log\n");
  fs.writeFileSync(path.join(w, "USER.md"), "- user\n");
  fs.linkSync(path.join(w, "memory/2026-11-02.md"), path.join(w, "memory/hard.md"));
  fs.symlinkSync("../MEMORY.md", path.join(w, "memory/2026-11-03.md")); // a flush wrote through it
  /** @type {{ relativePath: string, provenance: { originClass: "untrusted" | "agent" } }[]} */
  const records = [
    { relativePath: "memory/hard.md", provenance: { originClass: "untrusted" } },
    { relativePath: "memory/2026-11-03.md", provenance: { originClass: "untrusted" } },
    { relativePath: "USER.md", provenance: { originClass: "agent" } },
  ];
  /** @type {ReadRecord} */
  const reader = async () => {
    /** @type {RecordReader} */
    const read = async ({ relativePath }) =>
      records.find((r) => r.relativePath === relativePath)?.provenance;
    read.list = async ({ workspaceDir }) => {
      assert.equal(workspaceDir, w);
      return records;
    };
    return read;
  };
  const out = await classifyWorkspaceMemoryPaths(
    { workspaceDir: w, relativePaths: ["MEMORY.md", "memory/2026-11-02.md", "USER.md"] },
    reader,
  );
  assert.deepEqual(Object.fromEntries(out.map((c) => [c.relativePath, c.originClass])), {
    "MEMORY.md": "untrusted", // downgraded through memory/2026-11-03.md
    "memory/2026-11-02.md": "untrusted", // downgraded as memory/hard.md
    "USER.md": "agent",
  });
});
