// @ts-check
// Provenance classification of workspace memory files: the runtime's
// classifyWorkspaceMemoryPaths. OpenClaw 2026.9 loads MEMORY.md and USER.md into a
// session's context only when the memory slot owner classifies them as `owner` or
// `agent`; a runtime that cannot classify loses them silently. The rules are
// memory-core's (OpenClaw's `memory-path-provenance`), so a file loads with memindex
// exactly when it would with memory-core:
//
// * the file must be inside the workspace (real paths, or the pinned canonical path
//   OpenClaw read for a remote or sandboxed workspace); anything else is `untrusted`;
// * DREAMS.md and memory/dreaming/, memory/.dreams/ are dreaming's output: `system`;
// * a workspace memory file (MEMORY.md, memory.md, USER.md, users/<id>/USER.md,
//   memory/**/*.md) has the provenance OpenClaw recorded when it was last written
//   (a memory flush from a session with untrusted content downgrades the whole file
//   to `untrusted`), read with the host SDK's readMemoryArtifactProvenance; with no
//   record it is `agent` (the operator's own files);
// * anything else is `untrusted`.
//
// Stricter where memory-core is silent: a file with no record of its own under its
// real path is `untrusted` when a record downgraded the same file (same inode) under
// another name, a hard link or a symlink a flush wrote through (memory-core looks
// records up under the real path only, so such a file came back as `agent`).
//
// Never a blanket `owner`. When the host's record cannot be read, a workspace memory
// file is `untrusted` (fail closed: a downgraded file must not come back), and the
// reason is kept for `openclaw memindex status`.
import fs from "node:fs/promises";
import path from "node:path";

import { importHostSdk } from "./host.js";

/**
 * @import { ClassifyWorkspaceMemoryPathsParams, MemoryArtifactProvenance, MemoryOriginClass } from "../types/host.js"
 * @typedef {ClassifyWorkspaceMemoryPathsParams["readSources"]} ReadSources
 * @typedef {Array<{ relativePath: string, provenance: MemoryArtifactProvenance }>} ProvenanceList
 * @typedef {((params: { workspaceDir: string, relativePath: string }) => Promise<MemoryArtifactProvenance | undefined>)
 *   & { list?: (params: { workspaceDir: string }) => Promise<ProvenanceList | undefined> }} RecordReader
 * @typedef {() => Promise<RecordReader | { problem: string }>} ReadRecord
 */

const CURATED_ROOTS = new Set(["MEMORY.md", "memory.md", "USER.md"]);
const DREAM_FILES = new Set(["DREAMS.md", "dreams.md"]);
const DREAM_DIRS = new Set(["dreaming", ".dreams"]);
const PERSONAL_USER = /^users\/[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}\/USER\.md$/;

/** @type {{ problem: string | null, logged?: boolean }} */
export const classifierState = { problem: null };

/** The host's recorded-provenance reader (with `.list`, the workspace's records, when
 * the host exports it), or { problem }.
 * @type {ReadRecord} */
export async function defaultRecordReader() {
  const { mod, problem } = await importHostSdk("memory-core-host-runtime-core");
  if (typeof mod?.readMemoryArtifactProvenance !== "function") {
    return { problem: problem ?? "the host SDK has no readMemoryArtifactProvenance" };
  }
  const host = mod;
  /** @type {RecordReader} */
  const read = (params) => host.readMemoryArtifactProvenance(params);
  const list = host.listMemoryArtifactProvenance;
  if (typeof list === "function") read.list = (params) => list(params);
  return read;
}

/** Whether a record downgraded this same file under another name: a hard link to
 * it, or a symlink through which a flush wrote it (memory-core looks records up
 * under the real path only; stricter here, as a downgraded file must not come back). */
/**
 * @param {string} workspaceDir
 * @param {string} rel
 * @param {NonNullable<RecordReader["list"]>} list
 */
async function downgradedElsewhere(workspaceDir, rel, list) {
  const ws = await fs.realpath(workspaceDir);
  const mine = await fs.stat(path.join(ws, rel));
  for (const { relativePath, provenance } of (await list({ workspaceDir })) ?? []) {
    if (provenance?.originClass !== "untrusted" || relativePath === rel) continue;
    if (!isCleanRelative(relativePath)) continue;
    let other;
    try {
      other = await fs.stat(path.join(ws, relativePath)); // through a symlink too
    } catch {
      continue; // gone: it is not this file
    }
    if (other.dev === mine.dev && other.ino === mine.ino) return true;
  }
  return false;
}

/**
 * @param {unknown} p
 * @returns {p is string}
 */
function isCleanRelative(p) {
  return (
    typeof p === "string" &&
    p !== "" &&
    p !== "." &&
    p !== ".." &&
    !p.startsWith("../") &&
    !path.posix.isAbsolute(p) &&
    !path.win32.isAbsolute(p) &&
    !p.includes("\\") &&
    !p.includes("\0") &&
    path.posix.normalize(p) === p
  );
}

/**
 * The workspace-relative path a classification is about, or null (untrusted).
 * @param {string} workspaceDir
 * @param {string} relativePath
 * @param {ReadSources} readSources
 */
async function locate(workspaceDir, relativePath, readSources) {
  if (readSources !== undefined) {
    const pinned = readSources.find((s) => s?.relativePath === relativePath);
    const canonical = pinned?.canonicalRelativePath;
    return isCleanRelative(canonical) ? canonical : null;
  }
  let ws;
  let file;
  try {
    [ws, file] = await Promise.all([
      fs.realpath(workspaceDir),
      fs.realpath(path.resolve(workspaceDir, relativePath)),
    ]);
  } catch {
    return null;
  }
  const rel = path.relative(ws, file);
  if (!rel || rel.startsWith("..") || path.isAbsolute(rel)) return null;
  return rel.split(path.sep).join("/");
}

/**
 * `system`, `agent`, `untrusted` (or a recorded class) for one workspace path.
 * @param {{ workspaceDir: string, relativePath: string, readSources?: ReadSources, readRecord: ReadRecord }} params
 * @returns {Promise<MemoryOriginClass>}
 */
export async function classifyPath({ workspaceDir, relativePath, readSources, readRecord }) {
  const rel = await locate(workspaceDir, relativePath, readSources);
  if (rel === null) return "untrusted";
  const parts = rel.split("/");
  if (parts.length === 1 && DREAM_FILES.has(parts[0])) return "system";
  if (parts[0] === "memory" && DREAM_DIRS.has(parts[1])) return "system";
  const workspaceMemory =
    (parts.length === 1 && CURATED_ROOTS.has(parts[0])) ||
    PERSONAL_USER.test(rel) ||
    (parts[0] === "memory" && (parts.at(-1) ?? "").endsWith(".md"));
  if (!workspaceMemory) return "untrusted";
  const reader = await readRecord();
  if (typeof reader !== "function") {
    classifierState.problem = reader?.problem ?? "no provenance reader";
    return "untrusted";
  }
  const recorded = await reader({ workspaceDir, relativePath: rel });
  if (recorded?.originClass) return recorded.originClass;
  if (readSources === undefined && typeof reader.list === "function") {
    if (await downgradedElsewhere(workspaceDir, rel, reader.list)) return "untrusted";
  }
  return "agent";
}

/**
 * MemoryPluginRuntime.classifyWorkspaceMemoryPaths.
 * @param {ClassifyWorkspaceMemoryPathsParams} params
 * @param {ReadRecord} [readRecord]
 */
export async function classifyWorkspaceMemoryPaths(params, readRecord = defaultRecordReader) {
  const { workspaceDir, relativePaths, readSources } = params ?? {};
  if (typeof workspaceDir !== "string" || !Array.isArray(relativePaths)) return [];
  return Promise.all(
    relativePaths.map(async (relativePath) => {
      /** @type {MemoryOriginClass} */
      let originClass = "untrusted";
      try {
        originClass = await classifyPath({ workspaceDir, relativePath, readSources, readRecord });
      } catch (err) {
        classifierState.problem = `classifying ${relativePath}: ${err?.message ?? err}`;
      }
      return { relativePath, originClass };
    }),
  );
}
