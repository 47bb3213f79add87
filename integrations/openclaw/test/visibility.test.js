// @ts-check
// filterHits: session visibility and Active Memory's private recall, on a host whose
// session store is given here (the real gateway: tests/openclaw/test_openclaw_parity.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import { filterHits, isPrivateConversation } from "../src/visibility.js";

/**
 * @import { ConversationRecall, SessionEntry, SessionStore } from "../types/host.js"
 * @import { HostLoader } from "../src/visibility.js"
 */

/** @type {SessionStore} */
const STORE = {
  "agent:main:telegram:direct:111": { sessionId: "dm-a", chatType: "direct" },
  "agent:main:telegram:direct:333": { sessionId: "dm-b", chatType: "direct" },
  "agent:main:telegram:group:-100222": { sessionId: "grp", chatType: "direct" }, // chat.send's default
  "agent:main:cron:nightly": { sessionId: "cron-1" },
  "agent:main:main": { sessionId: "main-1" },
  "agent:ops:telegram:direct:111": { sessionId: "ops-dm" },
  "agent:main:explicit:portal-1": { sessionId: "portal", chatType: "direct" },
};

/**
 * A host whose session store is `store` (the SDK's shapes: types/host.d.ts).
 * @param {SessionStore} [store]
 * @returns {HostLoader}
 */
function fakeHost(store = STORE, { visibility = "all" } = {}) {
  const agentOf = (/** @type {string} */ key) => /^agent:([^:]+):/.exec(key)?.[1];
  return async () => ({
    host: {
      core: {
        parseAgentSessionKey: (key) => {
          const agentId = agentOf(key);
          return agentId ? { agentId } : null;
        },
        resolveDefaultAgentId: () => "main",
        resolveCanonicalMainSessionKey: ({ agentId }) => `agent:${agentId}:main`,
      },
      store: {
        sessionDeliveryOrigin: (e) => {
          const delivery = /** @type {{ kind?: string, origin?: { chatType?: string } } | undefined} */ (e?.delivery);
          return delivery?.kind === "external" ? delivery.origin : undefined;
        },
      },
      hit: {
        loadCombinedSessionStoreForGateway: () => ({ store, storePath: "/x" }),
        extractTranscriptIdentityFromSessionsMemoryHit: (p) => {
          const parts = p.split("/");
          const base = parts.at(-1) ?? "";
          const stem = base.replace(/\.jsonl(\..*)?$/, "");
          return { stem, ownerAgentId: parts.length === 3 ? parts[1] : undefined, archived: !base.endsWith(".jsonl") };
        },
        resolveTranscriptStemToSessionKeys: ({ store: s, stem }) =>
          Object.entries(s).filter(([, e]) => e.sessionId === stem).map(([k]) => k),
      },
      visibility: {
        resolveEffectiveSessionToolsVisibility: () => visibility,
        resolveSandboxSessionToolsVisibility: () => "spawned",
        createAgentToAgentPolicy: () => ({}),
        createSessionVisibilityGuard: async ({ requesterSessionKey, visibility: v }) => ({
          check: (key) => ({
            allowed: v === "self" ? key === requesterSessionKey : agentOf(key) === agentOf(requesterSessionKey),
          }),
        }),
      },
      sessions: { loadArchivedSessions: () => [] },
    },
  });
}

/**
 * @param {string} id
 * @param {string} [source]
 */
const hit = (id, source = "sessions") =>
  source === "sessions" ? { path: `sessions/main/${id}.jsonl`, source } : { path: id, source };
const HITS = [hit("MEMORY.md", "memory"), hit("dm-a"), hit("grp"), hit("dm-b"), hit("cron-1"), hit("main-1")];
const paths = (/** @type {{ path: string }[]} */ hits) => hits.map((h) => h.path);
/**
 * @param {string} anchor
 * @param {string} [corpus]
 * @returns {{ conversationRecall: ConversationRecall, requesterSessionKey: string }}
 */
const recall = (anchor, corpus = "configured") => ({
  conversationRecall: { anchorSessionKey: anchor, scope: "same-agent-private", corpus },
  requesterSessionKey: `${anchor}:active-memory:0123456789ab`,
});

test("private recall from a DM: the other DM only, never the group, the anchor or a cron run", async () => {
  const out = await filterHits({ agentId: "main", hits: HITS, ...recall("agent:main:telegram:direct:333") }, fakeHost());
  assert.deepEqual(paths(out), ["MEMORY.md", "sessions/main/dm-a.jsonl"]);
  const sessionsOnly = await filterHits(
    { agentId: "main", hits: HITS, ...recall("agent:main:telegram:direct:333", "sessions") },
    fakeHost(),
  );
  assert.deepEqual(paths(sessionsOnly), ["sessions/main/dm-a.jsonl"]);
});

test("a recall anchored in a group, sandboxed, or asked by a stranger gets no transcript", async () => {
  const host = fakeHost();
  for (const params of [
    recall("agent:main:telegram:group:-100222"),
    { ...recall("agent:main:telegram:direct:333"), sandboxed: true },
    { ...recall("agent:main:telegram:direct:333"), requesterSessionKey: "agent:main:telegram:direct:111" },
    { ...recall("agent:ops:telegram:direct:111") },
    { ...recall("agent:main:telegram:direct:333"), conversationRecall: { anchorSessionKey: "agent:main:telegram:direct:333", scope: "everything", corpus: "configured" } },
  ]) {
    const out = await filterHits({ agentId: "main", hits: HITS, ...params }, host);
    assert.deepEqual(paths(out), ["MEMORY.md"], JSON.stringify(params));
  }
  // a recall that names no corpus gets nothing at all (as memory-core answers it)
  const bare = recall("agent:main:telegram:direct:333");
  delete bare.conversationRecall.corpus;
  assert.deepEqual(await filterHits({ agentId: "main", hits: HITS, ...bare }, host), []);
});

test("an anchor whose transcript a group also names is not private", async () => {
  const store = { ...STORE, "agent:main:telegram:group:-100999": { sessionId: "dm-b" } };
  const out = await filterHits({ agentId: "main", hits: HITS, ...recall("agent:main:telegram:direct:333") }, fakeHost(store));
  assert.deepEqual(paths(out), ["MEMORY.md"]);
});

test("ordinary search: the session visibility guard decides; no requester, no transcript", async () => {
  const host = fakeHost();
  const mine = await filterHits({ agentId: "main", hits: HITS, requesterSessionKey: "agent:main:main" }, host);
  assert.deepEqual(paths(mine), paths(HITS));
  const none = await filterHits({ agentId: "main", hits: HITS }, host);
  assert.deepEqual(paths(none), ["MEMORY.md"]);
  const cli = await filterHits({ agentId: "main", hits: HITS, trustedAgentScope: true }, host);
  assert.deepEqual(paths(cli), paths(HITS));
  const self = await filterHits(
    { agentId: "main", hits: HITS, requesterSessionKey: "agent:main:telegram:direct:111" },
    fakeHost(STORE, { visibility: "self" }),
  );
  assert.deepEqual(paths(self), ["MEMORY.md", "sessions/main/dm-a.jsonl"]);
  const ops = { path: "sessions/ops/ops-dm.jsonl", source: "sessions" };
  const otherAgent = await filterHits({ agentId: "main", hits: [ops], requesterSessionKey: "agent:main:main" }, host);
  assert.deepEqual(otherAgent, []);
  // a live transcript of this agent no session names (an old window): shown under
  // visibility "all", never to a private recall
  const old = { path: "sessions/main/gone.jsonl", source: "sessions" };
  assert.deepEqual(await filterHits({ agentId: "main", hits: [old], requesterSessionKey: "agent:main:main" }, host), [old]);
  assert.deepEqual(await filterHits({ agentId: "main", hits: [old], ...recall("agent:main:telegram:direct:333") }, host), []);
});

test("no host SDK: fail closed wherever the host's rules are needed", async () => {
  const missing = async () => ({ host: null, problem: "not found" });
  const r = await filterHits({ agentId: "main", hits: HITS, ...recall("agent:main:telegram:direct:333") }, missing);
  assert.deepEqual(paths(r), ["MEMORY.md"]);
  const none = await filterHits({ agentId: "main", hits: HITS }, missing);
  assert.deepEqual(paths(none), ["MEMORY.md"]);
  const self = { tools: { sessions: { visibility: "self" } } };
  const narrowed = await filterHits({ cfg: self, agentId: "main", hits: HITS, requesterSessionKey: "agent:main:main" }, missing);
  assert.deepEqual(paths(narrowed), ["MEMORY.md"]);
  const other = await filterHits({ agentId: "main", hits: HITS, requesterSessionKey: "agent:ops:main" }, missing);
  assert.deepEqual(paths(other), ["MEMORY.md"]);
  // the default visibility ("all"): the agent's own sessions, as with the host
  const o = await filterHits({ agentId: "main", hits: HITS, requesterSessionKey: "agent:main:main" }, missing);
  assert.deepEqual(paths(o), paths(HITS));
});

test("private conversations by key and chat type", () => {
  const host = { store: { sessionDeliveryOrigin: () => undefined } };
  /**
   * @param {string} key
   * @param {SessionEntry} [entry]
   */
  const p = (key, entry = {}) => isPrivateConversation({ host, agentId: "main", key, entry });
  assert.equal(p("agent:main:telegram:direct:1"), true);
  assert.equal(p("agent:main:whatsapp:dm:1"), true);
  assert.equal(p("agent:main:telegram:group:1", { chatType: "direct" }), false);
  assert.equal(p("agent:main:main", { chatType: "direct" }), true);
  assert.equal(p("agent:main:main"), false);
  assert.equal(p("agent:main:cron:x", { chatType: "direct" }), false);
  assert.equal(p("agent:main:explicit:p", { chatType: "direct" }), true);
  assert.equal(p("agent:main:explicit:p"), false);
  assert.equal(p("agent:main:telegram:direct:1", { chatType: "group" }), false);
  assert.equal(isPrivateConversation({ host, agentId: "main", key: "agent:main:telegram:direct:1" }), false);
});
