// @ts-check
// `openclaw memory forget` when memindex owns the memory slot with dreaming off (with
// dreaming on, memory-core's own command runs; memindex honours what it records).
//
// A forgotten session is recorded where memory-core records it: a row of
// `memory_session_tombstones(session_id, agent_id, reason, created_at)` in the agent's
// database (agents/<id>/agent/openclaw-agent.sqlite). memindex never indexes a
// recorded session again and drops what it had at its next sync, which this command
// asks for at once. A selector is matched as memory-core matches it: exactly, against
// every window's session id and session key and the registered transcript archives;
// one that matches nothing is recorded as a session id as given.
import fs from "node:fs";
import path from "node:path";

import { normalizeAgentId } from "./agents.js";

/**
 * @import { DatabaseSync } from "node:sqlite"
 * @typedef {{ sessionId: string, sessionKey?: string, source: "live" | "archived" | "unresolved" }} SessionResolution
 * @typedef {{
 *   agentId: string, dryRun: boolean, engine: "memindex", sessionIds: string[],
 *   sessionResolutions: SessionResolution[], recorded: number, reindexed?: boolean,
 * }} ForgetReport
 */

const TOMBSTONES = `CREATE TABLE IF NOT EXISTS memory_session_tombstones (
  session_id TEXT NOT NULL PRIMARY KEY,
  agent_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT`;

/**
 * @param {DatabaseSync} db
 * @param {string} name
 */
function hasTable(db, name) {
  return Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?").get(name));
}

/**
 * The agent's database file, or an error naming where it was looked for.
 * @param {string} stateDir
 * @param {string} agentId
 */
export function agentDatabase(stateDir, agentId) {
  const file = path.join(stateDir, "agents", normalizeAgentId(agentId), "agent", "openclaw-agent.sqlite");
  let st;
  try {
    st = fs.lstatSync(file);
  } catch {
    throw new Error(`no agent database for agent ${agentId} at ${file}`);
  }
  if (!st.isFile()) throw new Error(`${file} is not a regular file`);
  return file;
}

/**
 * [{sessionId, sessionKey?, source: "live" | "archived" | "unresolved"}] per selector.
 * @param {DatabaseSync} db
 * @param {string[]} selectors
 * @returns {SessionResolution[]}
 */
export function resolveSessions(db, selectors) {
  /** @type {Map<string, SessionResolution>} */
  const out = new Map();
  /**
   * @param {string} sessionId
   * @param {string | null | undefined} sessionKey
   * @param {SessionResolution["source"]} source
   */
  const add = (sessionId, sessionKey, source) => {
    if (!out.has(sessionId)) out.set(sessionId, { sessionId, ...(sessionKey ? { sessionKey } : {}), source });
  };
  const windows = hasTable(db, "session_windows")
    ? db.prepare("SELECT session_id, session_key FROM session_windows WHERE session_id = ? OR session_key = ?")
    : null;
  const archives = hasTable(db, "session_transcript_archives")
    ? db.prepare(
        "SELECT session_id, session_key FROM session_transcript_archives WHERE session_id = ? OR session_key = ?",
      )
    : null;
  /** @typedef {{ session_id: string, session_key: string | null }} Row */
  for (const sel of selectors) {
    let found = false;
    for (const r of /** @type {Row[]} */ (windows?.all(sel, sel) ?? [])) {
      add(r.session_id, r.session_key, "live");
      found = true;
    }
    for (const r of /** @type {Row[]} */ (archives?.all(sel, sel) ?? [])) {
      add(r.session_id, r.session_key, "archived");
      found = true;
    }
    if (!found) add(sel, undefined, "unresolved");
  }
  return [...out.values()];
}

/**
 * Record the sessions as forgotten (unless dryRun); the report memory-core prints, in part.
 * @param {{ stateDir: string, agentId: string, selectors?: unknown[], dryRun?: boolean, now?: number }} params
 * @returns {Promise<ForgetReport>}
 */
export async function forgetSessions({ stateDir, agentId, selectors, dryRun = false, now = Date.now() }) {
  const id = normalizeAgentId(agentId);
  const wanted = [...new Set((selectors ?? []).map((s) => String(s).trim()).filter(Boolean))];
  if (!wanted.length) throw new Error("name the sessions to forget: --session <id-or-key> (repeatable)");
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(agentDatabase(stateDir, id));
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    const sessionResolutions = resolveSessions(db, wanted);
    const sessionIds = sessionResolutions.map((r) => r.sessionId);
    let recorded = 0;
    if (!dryRun) {
      db.exec(TOMBSTONES);
      const insert = db.prepare(
        "INSERT INTO memory_session_tombstones(session_id, agent_id, reason, created_at) " +
          "VALUES(?, ?, 'forgotten', ?) ON CONFLICT(session_id) DO NOTHING",
      );
      db.exec("BEGIN IMMEDIATE");
      try {
        for (const sid of sessionIds) recorded += Number(insert.run(sid, id, now).changes);
        db.exec("COMMIT");
      } catch (err) {
        db.exec("ROLLBACK");
        throw err;
      }
    }
    return { agentId: id, dryRun, engine: "memindex", sessionIds, sessionResolutions, recorded };
  } finally {
    db.close();
  }
}
