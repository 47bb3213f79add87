// Unit tests of the plugin's own logic (node --test); the real-OpenClaw tests are
// tests/test_openclaw_plugin.py.
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { authorizeHits, configuredAgents } from "../src/agents.js";
import { ensureDaemon } from "../src/daemon.js";
import { ManagerPool } from "../src/manager.js";
import { call } from "../src/rpc.js";
import { resolveSettings } from "../src/settings.js";
import { createSearchTool } from "../src/tools.js";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "mi-plugin-"));

/** A socket that accepts and never answers: a stuck daemon. */
function stuckServer(name) {
  const sock = path.join(tmp, name);
  const server = net.createServer(() => {});
  return new Promise((resolve) => server.listen(sock, () => resolve({ sock, server })));
}

test("a call to a stuck daemon fails at its timeout, naming memindex", async () => {
  const { sock, server } = await stuckServer("stuck.sock");
  const t0 = Date.now();
  await assert.rejects(call(sock, "memory_search", { query: "x" }, { timeoutMs: 300 }), (err) => {
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
  assert.deepEqual(out.details.results, []);
  assert.equal(out.details.unavailable, true);
  assert.match(out.details.error, /did not answer/);
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
  await assert.rejects(ensureDaemon(settings), (err) => {
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
