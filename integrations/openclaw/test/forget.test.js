// @ts-check
// forgetSessions: memory-core's tombstones, written where memory-core writes them
// (memindex honouring them: tests/openclaw/test_openclaw_lifecycle.py; the real gateway:
// tests/openclaw/test_openclaw_parity.py).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { test } from "node:test";

import { forgetSessions } from "../src/forget.js";

function stateWithDb() {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), "mi-forget-"));
  const dir = path.join(state, "agents", "main", "agent");
  fs.mkdirSync(dir, { recursive: true });
  const db = new DatabaseSync(path.join(dir, "openclaw-agent.sqlite"));
  db.exec(`CREATE TABLE session_windows (session_id TEXT PRIMARY KEY, session_key TEXT NOT NULL);
    CREATE TABLE session_transcript_archives (session_id TEXT, session_key TEXT, archive_name TEXT);
    INSERT INTO session_windows VALUES ('w1', 'agent:main:telegram:direct:1'), ('w2', 'agent:main:telegram:direct:1'),
      ('w3', 'agent:main:main');
    INSERT INTO session_transcript_archives VALUES ('d1', 'agent:main:telegram:direct:2', 'd1.jsonl.deleted.x.zst');`);
  return { state, db };
}

test("a key selects every window, an archive by its key; an unknown id is kept as given", async () => {
  const { state, db } = stateWithDb();
  const r = await forgetSessions({
    stateDir: state,
    agentId: "Main",
    selectors: ["agent:main:telegram:direct:1", "agent:main:telegram:direct:2", "raw-id", "raw-id"],
    now: 1234,
  });
  assert.deepEqual(r.sessionIds, ["w1", "w2", "d1", "raw-id"]);
  assert.deepEqual(
    r.sessionResolutions.map((s) => s.source),
    ["live", "live", "archived", "unresolved"],
  );
  assert.equal(r.recorded, 4);
  const rows = db.prepare("SELECT session_id, agent_id, reason, created_at FROM memory_session_tombstones ORDER BY 1").all();
  assert.deepEqual(
    rows.map((x) => [x.session_id, x.agent_id, x.reason, x.created_at]),
    [["d1", "main", "forgotten", 1234], ["raw-id", "main", "forgotten", 1234], ["w1", "main", "forgotten", 1234], ["w2", "main", "forgotten", 1234]],
  );
  const again = await forgetSessions({ stateDir: state, agentId: "main", selectors: ["w1"] });
  assert.equal(again.recorded, 0); // forgetting twice records once
});

test("a dry run writes nothing; no selector and no database are errors", async () => {
  const { state, db } = stateWithDb();
  const r = await forgetSessions({ stateDir: state, agentId: "main", selectors: ["w3"], dryRun: true });
  assert.deepEqual(r.sessionIds, ["w3"]);
  assert.equal(r.recorded, 0);
  assert.equal(db.prepare("SELECT 1 FROM sqlite_master WHERE name='memory_session_tombstones'").get(), undefined);
  await assert.rejects(forgetSessions({ stateDir: state, agentId: "main", selectors: [] }), /--session/);
  await assert.rejects(forgetSessions({ stateDir: state, agentId: "ops", selectors: ["x"] }), /no agent database for agent ops/);
});
