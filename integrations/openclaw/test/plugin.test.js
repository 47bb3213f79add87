// @ts-check
// Unit tests of the plugin's own logic (node --test); the real-OpenClaw tests are
// tests/openclaw/test_openclaw_plugin.py.
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { authorizeHits, configuredAgents, normalizeAgentId, sessionKeyAgent } from "../src/agents.js";
import { toOpenClawHit, withProvenance } from "../src/answers.js";
import { byteSize, memoryFlushPlan } from "../src/flush.js";
import { ensureDaemon } from "../src/daemon.js";
import { ManagerPool } from "../src/manager.js";
import { call, socketProblem } from "../src/rpc.js";
import { resolveSettings } from "../src/settings.js";
import { SEARCH_PARAMETERS, createSearchTool, param } from "../src/tools.js";
import { recallPrompt } from "../index.js";

/** @import { MemindexError } from "../src/rpc.js" */

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "mi-plugin-"));

/**
 * A socket that accepts and never answers: a stuck daemon.
 * @param {string} name
 * @returns {Promise<{ sock: string, server: net.Server }>}
 */
function stuckServer(name) {
  const sock = path.join(tmp, name);
  const server = net.createServer(() => {});
  return new Promise((resolve) => server.listen(sock, () => resolve({ sock, server })));
}

test("a call to a stuck daemon fails at its timeout, naming memindex", async () => {
  const { sock, server } = await stuckServer("stuck.sock");
  const t0 = Date.now();
  await assert.rejects(call(sock, "memory_search", { query: "x" }, { timeoutMs: 300 }), (/** @type {MemindexError} */ err) => {
    assert.equal(err.code, "timeout");
    assert.match(err.message, /memindex did not answer memory_search within 0\.3 s/);
    return true;
  });
  assert.ok(Date.now() - t0 < 2000);
  server.close();
});

test("the search tool turns a timeout into a result the agent can read", async () => {
  const { sock, server } = await stuckServer("stuck2.sock");
  const settings = { ...resolveSettings({ socket: sock, timeoutMs: 300, startTimeoutMs: 300 }) };
  const pool = new ManagerPool(settings);
  const tool = createSearchTool({ agentId: "main", sessionKey: "agent:main:main" }, pool);
  const t0 = Date.now();
  const out = await tool.execute("call-1", { query: "anything" });
  assert.ok(Date.now() - t0 < 3000);
  const details = /** @type {{ results: unknown[], unavailable: boolean, error: string }} */ (out.details);
  assert.deepEqual(details.results, []);
  assert.equal(details.unavailable, true);
  assert.match(details.error, /did not answer/);
  assert.match(out.content[0].text, /Memory search is unavailable/);
  server.close();
});

test("nothing listening and memindex not installed: a clear error at once", async () => {
  const settings = resolveSettings({
    socket: path.join(tmp, "none.sock"),
    command: path.join(tmp, "no-such-memindex"),
    logFile: path.join(tmp, "log", "memindex.log"),
  });
  const t0 = Date.now();
  await assert.rejects(ensureDaemon(settings), (/** @type {MemindexError} */ err) => {
    assert.equal(err.code, "not_installed");
    assert.match(err.message, /memindex is not installed/);
    return true;
  });
  assert.ok(Date.now() - t0 < 3000);
});

test("autoStart off: no daemon is an error naming the command to run", async () => {
  const settings = resolveSettings({ socket: path.join(tmp, "none.sock"), autoStart: false });
  await assert.rejects(ensureDaemon(settings), /autoStart is off; start it with `memindex --openclaw-config .* serve --socket/);
});

test("a daemon that exits at start reports its output", async () => {
  const script = path.join(tmp, "dies.sh");
  fs.writeFileSync(script, "#!/bin/sh\necho 'config: broken thing' >&2\nexit 2\n", { mode: 0o755 });
  const settings = resolveSettings({
    socket: path.join(tmp, "dies.sock"),
    command: script,
    logFile: path.join(tmp, "dies.log"),
    startTimeoutMs: 5000,
  });
  await assert.rejects(ensureDaemon(settings), /exited \(code 2\).*config: broken thing/s);
});

test("transcript hits: shown to their own agent only, never when sandboxed", () => {
  const hits = [
    { path: "MEMORY.md", source: "memory" },
    { path: "sessions/s1.jsonl", source: "sessions" },
  ];
  const mem = [hits[0]];
  const own = { agentId: "main", hits };
  assert.deepEqual(authorizeHits({ ...own, requesterSessionKey: "agent:main:main" }), hits);
  assert.deepEqual(authorizeHits({ ...own, requesterSessionKey: "agent:MAIN:dm:1" }), hits);
  assert.deepEqual(authorizeHits({ ...own, requesterSessionKey: "agent:other:main" }), mem);
  assert.deepEqual(authorizeHits({ ...own, requesterSessionKey: "global" }), mem);
  assert.deepEqual(authorizeHits({ ...own, sandboxed: true }), mem);
  assert.deepEqual(authorizeHits(own), hits); // the operator's CLI, for this agent
  assert.deepEqual(authorizeHits({ agentId: "", hits }), mem);
});

test("configured agents: the default first, both config shapes", () => {
  assert.deepEqual(configuredAgents({}), ["main"]);
  assert.deepEqual(
    configuredAgents({ agents: { list: [{ id: "ops" }, { id: "main", default: true }] } }),
    ["main", "ops"],
  );
  assert.deepEqual(configuredAgents({ agents: { entries: { work: {}, main: {} } } }), [
    "main",
    "work",
  ]);
});

test("a socket another user owns gets nothing sent, and no daemon is started", async () => {
  const dir = fs.mkdtempSync(path.join(tmp, "shared-"));
  const sock = path.join(dir, "memindex.sock");
  let received = "";
  const server = net.createServer((c) => c.on("data", (d) => (received += d)));
  await new Promise((resolve) => server.listen(sock, () => resolve(undefined)));
  try {
    assert.ok(process.getuid, "a platform with uids");
    const me = process.getuid();
    assert.equal(socketProblem(sock, me), null);
    assert.match(socketProblem(sock, me + 1) ?? "", /belongs to uid \d+, not to this gateway's user/);
    fs.chmodSync(dir, 0o777); // others may swap the socket in a folder like this
    assert.match(socketProblem(sock, me) ?? "", /can be written by other users \(no sticky bit\)/);
    fs.chmodSync(dir, 0o1777); // /tmp's mode: only the owner may replace its file
    assert.equal(socketProblem(sock, me), null);
    fs.chmodSync(dir, 0o777);
    const settings = resolveSettings({
      socket: sock,
      command: path.join(tmp, "must-not-run"),
      startTimeoutMs: 500,
    });
    await assert.rejects(ensureDaemon(settings), (/** @type {MemindexError} */ err) => {
      assert.equal(err.code, "foreign_socket");
      assert.match(err.message, /nothing was sent/);
      return true;
    });
    await assert.rejects(call(sock, "memory_search", { query: "deploy password" }), /refusing/);
    if (me === 0) {
      // as root the owner can be changed for real: the check reads the file's owner
      fs.chmodSync(dir, 0o700);
      fs.lchownSync(sock, 12345, 12345);
      await assert.rejects(call(sock, "ping", {}), /belongs to uid 12345/);
    }
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(received, "");
  } finally {
    server.close();
  }
});

test("the flush plan: memory-core's target, prompts and thresholds; off when disabled", () => {
  const nowMs = Date.UTC(2026, 10, 21, 14, 5, 0);
  const cfg = { agents: { defaults: { userTimezone: "Europe/Berlin" } } };
  const plan = memoryFlushPlan({ cfg, nowMs });
  assert.ok(plan);
  assert.equal(plan.relativePath, "memory/2026-11-21.md");
  assert.equal(plan.softThresholdTokens, 4000);
  assert.equal(plan.forceFlushTranscriptBytes, 2 * 1024 * 1024);
  assert.equal(plan.reserveTokensFloor, 20000);
  assert.match(plan.prompt, /^Pre-compaction memory flush\. Store durable memories only in memory\/2026-11-21\.md/);
  assert.match(plan.prompt, /\nCurrent time: Saturday, November 21st, 2026 - .*\(Europe\/Berlin\)\nReference UTC: 2026-11-21 14:05 UTC$/);
  assert.match(plan.systemPrompt, /^Pre-compaction memory flush turn\./);
  assert.ok(!("model" in plan));
  const small = memoryFlushPlan({ cfg, nowMs, contextWindowTokens: 16000 });
  assert.ok(small);
  assert.equal(small.reserveTokensFloor, 4000);
  assert.equal(small.softThresholdTokens, 4000);
  const tuned = memoryFlushPlan({
    nowMs,
    contextWindowTokens: 128000,
    cfg: { agents: { defaults: { compaction: { memoryFlush: {
      softThresholdTokens: 9000, forceFlushTranscriptBytes: "1mb", model: " ollama/qwen3:8b " } } } } },
  });
  assert.ok(tuned);
  assert.deepEqual(
    [tuned.softThresholdTokens, tuned.forceFlushTranscriptBytes, tuned.model],
    [9000, 1024 * 1024, "ollama/qwen3:8b"],
  );
  const off = { agents: { defaults: { compaction: { memoryFlush: { enabled: false } } } } };
  assert.equal(memoryFlushPlan({ cfg: off, nowMs }), null);
  assert.equal(byteSize("1.5kb"), 1536);
  assert.equal(byteSize("12 parsecs"), null);
});

test("agent ids as OpenClaw normalises them, and snake_case tool arguments", () => {
  assert.equal(normalizeAgentId("  Ops Team! "), "ops-team");
  assert.equal(normalizeAgentId("***"), "main");
  assert.equal(sessionKeyAgent("agent:MAIN:dm:1"), "main");
  assert.deepEqual(configuredAgents({ agents: { list: [{ id: "Ops" }, { id: "Main" }] } }), ["main", "ops"]);
  assert.equal(param({ max_results: 3 }, "maxResults"), 3);
  assert.equal(param({ maxResults: 4, max_results: 3 }, "maxResults"), 4);
  assert.equal(param({ min_score: "0.5" }, "minScore"), 0.5);
  assert.ok("max_results" in SEARCH_PARAMETERS.properties && "min_score" in SEARCH_PARAMETERS.properties);
});

test("the recall prompt is memory-core's for the tools at hand and follows citationsMode", () => {
  assert.deepEqual(recallPrompt({ availableTools: new Set(["read"]) }), []);
  const text = recallPrompt({ availableTools: new Set(["memory_search"]) }).join("\n");
  assert.match(text, /## Memory Recall/);
  assert.match(text, /Session hits are search snippets only/);
  assert.match(text, /Source: <path#line>/);
  const both = recallPrompt({
    availableTools: new Set(["memory_search", "memory_get", "sessions_search", "sessions_history"]),
  }).join("\n");
  assert.match(both, /for memory-file hits, use memory_get/);
  assert.match(both, /then sessions_history with the returned sessionKey/);
  assert.match(both, /Never read raw transcript files/);
  const off = recallPrompt({ availableTools: new Set(["memory_search"]), citationsMode: "off" });
  assert.match(off.join("\n"), /Citations are disabled/);
});

test("a log file or socket on /proc is refused, never created", async () => {
  const { onKernelFs } = await import("../src/daemon.js");
  assert.equal(onKernelFs("/proc/self/fd/x.log"), true);
  assert.equal(onKernelFs("/sys"), true);
  assert.equal(onKernelFs("/tmp/memindex.log"), false);
  const settings = resolveSettings({ socket: path.join(tmp, "p.sock"), logFile: "/proc/1/memindex/x.log" });
  const t0 = Date.now();
  await assert.rejects(ensureDaemon(settings), /kernel file system/);
  assert.ok(Date.now() - t0 < 3000);
});

test("the feature lines say who serves what, per dreaming mode", async () => {
  const { featureLines, features } = await import("../src/features.js");
  const on = features({ dreaming: true });
  const off = features({ dreaming: false });
  assert.equal(on.find((f) => f.id === "forget")?.servedBy, "memory-core");
  assert.equal(off.find((f) => f.id === "forget")?.servedBy, "memindex");
  assert.equal(off.find((f) => f.id === "dreaming")?.servedBy, "nobody");
  const text = featureLines(on).join("\n");
  assert.match(text, /served by memindex:\n    - MEMORY.md and USER.md/);
  assert.match(text, /served by memory-core:\n    - openclaw memory forget/);
  assert.match(featureLines(off).join("\n"), /served by nobody:\n    - Dreaming/);
});

test("a transcript hit carries the provenance memindex read from its messages", async () => {
  const said = toOpenClawHit({
    path: "sessions/main/s1.jsonl", startLine: 2, endLine: 3, score: 0.9, snippet: "User: x",
    source: "sessions", provenance: { originClass: "owner", sessionKind: "interactive", observedAt: 1764400000000 },
  });
  const old = toOpenClawHit({
    path: "sessions/main/s0.jsonl", startLine: 1, endLine: 1, score: 0.5, snippet: "User: y", source: "sessions",
  });
  const forged = toOpenClawHit({
    path: "sessions/main/s2.jsonl", startLine: 1, endLine: 1, score: 0.4, snippet: "User: z",
    source: "sessions", provenance: { originClass: "root", sessionKind: "interactive", observedAt: 1 },
  });
  const oddKind = toOpenClawHit({
    path: "sessions/main/s3.jsonl", startLine: 1, endLine: 1, score: 0.3, snippet: "User: w",
    source: "sessions", provenance: { originClass: "agent", sessionKind: "dreaming", observedAt: 5 },
  });
  await withProvenance([said, old, forged, oddKind], undefined);
  assert.deepEqual(said.provenance, { originClass: "owner", sessionKind: "interactive", observedAt: 1764400000000 });
  // a session kind OpenClaw's provenance does not have is `unknown`
  assert.deepEqual(oddKind.provenance, { originClass: "agent", sessionKind: "unknown", observedAt: 5 });
  // indexed before memindex kept it, or a class OpenClaw does not have: untrusted, never upwards
  assert.deepEqual(old.provenance, { originClass: "untrusted", sessionKind: "unknown", observedAt: 0 });
  assert.deepEqual(forged.provenance, { originClass: "untrusted", sessionKind: "unknown", observedAt: 0 });
});
