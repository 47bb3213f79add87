// @ts-check
// The agent's memory_search / memory_get tools, answered by memindex.
import fs from "node:fs";

import { configuredAgents, normalizeAgentId, sessionKeyAgent } from "./agents.js";
import {
  citationsMode,
  corpusMetadata,
  mergeCorpora,
  present,
  readWiki,
  searchWiki,
  withCitations,
} from "./corpus.js";
import { filterHits } from "./visibility.js";

/**
 * @import { AgentTool, MemorySearchResult, OpenClawConfig, ToolContext, ToolResult } from "../types/host.js"
 * @import { Attempt } from "./corpus.js"
 * @import { ManagerPool, MemindexManager } from "./manager.js"
 * @typedef {Awaited<ReturnType<MemindexManager["searchFull"]>>} SearchAnswer
 * @typedef {(ctx: ToolContext, query: string, hits: MemorySearchResult[], workspaceDir: string | undefined) => Promise<unknown> | undefined} OnRecall
 */

// memindex's sources per corpus (the wiki is OpenClaw's supplements: src/corpus.js)
/** @type {Record<string, string[] | undefined>} */
const CORPUS = { memory: ["memory"], sessions: ["sessions"], all: undefined, wiki: undefined };

// camelCase as memory-core's tools take them; the snake_case spellings OpenClaw's own
// tool readers also accept (since 2026.10 models are prompted with them) are aliases.
// Made from memindex's protocol table (indexer/surfaces/openclaw/schemas.py, written
// by scripts/gen_config.py): each parameter as the socket checks it.
const SCHEMAS = JSON.parse(fs.readFileSync(new URL("./schemas.json", import.meta.url), "utf8"));
export const SEARCH_PARAMETERS = SCHEMAS.memory_search;
export const GET_PARAMETERS = SCHEMAS.memory_get;

/**
 * A parameter by its camelCase name, else its snake_case one; numeric strings too.
 * @param {Record<string, unknown> | undefined} params
 * @param {string} name
 */
export function param(params, name) {
  const snake = name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  const value = params?.[name] ?? params?.[snake];
  if (typeof value === "string" && value.trim() && Number.isFinite(Number(value))) return Number(value);
  return value;
}

/**
 * @param {unknown} payload
 * @returns {ToolResult}
 */
export function jsonResult(payload) {
  return { content: [{ type: "text", text: JSON.stringify(payload, null, 2) }], details: payload };
}

/**
 * @param {unknown} value
 * @returns {number | undefined}
 */
function integer(value) {
  return Number.isInteger(value) ? /** @type {number} */ (value) : undefined;
}

/**
 * @param {ToolContext} ctx
 * @returns {OpenClawConfig}
 */
function toolConfig(ctx) {
  return ctx.getRuntimeConfig?.() ?? ctx.runtimeConfig ?? ctx.config ?? {};
}

/** @param {ToolContext} ctx */
function toolAgent(ctx) {
  const cfg = toolConfig(ctx);
  const id = ctx.agentId ?? sessionKeyAgent(ctx.sessionKey) ?? configuredAgents(cfg)[0];
  return normalizeAgentId(id);
}

/**
 * @param {Error} err
 * @param {string} agentId
 */
function unavailable(err, agentId) {
  return {
    results: [],
    engine: "memindex",
    unavailable: true,
    error: err.message,
    warning: `Memory search is unavailable: ${err.message}`,
    action:
      `Tell the user memory search failed. They can check it with \`memindex status\` ` +
      `or \`openclaw memory status --agent ${agentId}\`.`,
  };
}

/**
 * @param {ToolContext} ctx
 * @param {ManagerPool} pool
 * @param {{ onRecall?: OnRecall }} [opts]
 * @returns {AgentTool}
 */
export function createSearchTool(ctx, pool, { onRecall } = {}) {
  const agentId = toolAgent(ctx);
  return {
    name: "memory_search",
    label: "Memory Search",
    description:
      "Search this agent's memory (MEMORY.md, memory/*.md daily notes, extra note folders" +
      " and, when enabled, its own session transcripts) with memindex: keyword + semantic" +
      " search with line-range citations. Use it before answering about prior work," +
      " decisions, dates, people, preferences or todos; then memory_get the cited lines." +
      " corpus=memory or corpus=sessions restricts the source.",
    parameters: SEARCH_PARAMETERS,
    async execute(_toolCallId, params, signal) {
      const query = typeof params?.query === "string" ? params.query : "";
      const asked = params?.corpus;
      if (asked !== undefined && !(asked in CORPUS)) {
        return jsonResult({
          results: [],
          engine: "memindex",
          error: `corpus must be one of: ${Object.keys(CORPUS).join(", ")}`,
        });
      }
      const recall = ctx.conversationRecall ?? null;
      const corpus = recall?.corpus === "sessions" ? "sessions" : (asked ?? "default");
      if (corpus === "sessions" && ctx.sandboxed) {
        return jsonResult({
          results: [],
          engine: "memindex",
          warning: "Session transcripts are not searchable from a sandboxed run.",
        });
      }
      const searchesMemory = corpus !== "wiki";
      const searchesWiki = corpus === "wiki" || corpus === "all";
      /** @type {Record<string, unknown>} */
      const req = {};
      const maxResults = integer(param(params, "maxResults"));
      const minScore = param(params, "minScore");
      if (maxResults !== undefined) req.maxResults = maxResults;
      if (typeof minScore === "number" && Number.isFinite(minScore)) req.minScore = minScore;
      if (CORPUS[corpus]) req.sources = CORPUS[corpus];
      // the session's active repositories: their memory entries rank first
      const active = Array.isArray(ctx.activeProjectKeys)
        ? ctx.activeProjectKeys.filter((k) => typeof k === "string" && k.trim()).slice(0, 16)
        : [];
      if (active.length) req.activeProjectKeys = active;
      // Active Memory's private recall: transcripts of this agent's other private
      // conversations only (src/visibility.js); "sessions" asks for nothing else
      if (recall?.corpus === "sessions" && asked === "memory") {
        return jsonResult({ results: [], engine: "memindex" });
      }
      const cfg = toolConfig(ctx);
      const wiki = searchesWiki
        ? searchWiki({
            query,
            maxResults,
            agentId,
            agentSessionKey: ctx.sessionKey,
            sandboxed: Boolean(ctx.sandboxed),
          }).catch((err) => ({ corpus: "wiki", outcome: "unavailable", error: err.message, results: [] }))
        : null;
      /** @type {(Attempt & { res?: SearchAnswer, results: MemorySearchResult[] }) | null} */
      let memory = null;
      /** @type {MemindexManager | null} */
      let manager = null;
      if (searchesMemory) {
        try {
          manager = await pool.get(agentId);
          const res = await manager.searchFull(query, req, signal);
          const results = await filterHits({
            cfg,
            agentId,
            requesterSessionKey: ctx.sessionKey,
            sandboxed: Boolean(ctx.sandboxed),
            conversationRecall: recall,
            hits: res.results,
          });
          memory = { corpus: "memory", outcome: "ok", res, results };
        } catch (err) {
          if (!searchesWiki) return jsonResult(unavailable(err, agentId));
          memory = { corpus: "memory", outcome: "unavailable", error: err.message, results: [] };
        }
      }
      const w = wiki ? await wiki : null;
      const memoryHits = memory?.results ?? [];
      const wikiHits = w?.outcome === "not-registered" ? [] : (w?.results ?? []);
      const results = searchesWiki
        ? mergeCorpora(memoryHits, wikiHits, maxResults ?? 10, corpus === "all")
        : memoryHits;
      const shown = new Set(results);
      const recalled = memoryHits.filter((h) => shown.has(h));
      // dreaming ranks what to promote by what the agent keeps recalling (the memory
      // hits the model is shown, as memory-core records them)
      if (memory?.outcome === "ok") {
        onRecall?.(ctx, query, recalled, manager?.lastStatus?.workspace)?.catch?.(() => {});
      }
      const mode = citationsMode(cfg);
      const cite = withCitations(mode, ctx.sessionKey);
      const attempts = [...(corpus === "all" && memory ? [memory] : []), ...(w ? [w] : [])];
      /** @type {Partial<SearchAnswer>} */
      const res = memory?.res ?? {};
      /** @type {Set<unknown>} */
      const fromMemory = new Set(memoryHits);
      return jsonResult({
        results: results.map((h) => (fromMemory.has(h) ? present(/** @type {MemorySearchResult} */ (h), cite) : h)),
        engine: "memindex",
        provider: res.provider,
        model: res.model,
        mode: res.mode,
        citations: mode,
        ...(res.fallback ? { fallback: res.fallback } : {}),
        ...(attempts.length ? corpusMetadata(attempts) : {}),
        debug: { backend: "memindex", hits: results.length },
      });
    },
  };
}

/**
 * @param {ToolContext} ctx
 * @param {ManagerPool} pool
 * @returns {AgentTool}
 */
export function createGetTool(ctx, pool) {
  const agentId = toolAgent(ctx);
  return {
    name: "memory_get",
    label: "Memory Get",
    description:
      "Read lines of a memory file or session transcript found by memory_search (path as" +
      " cited; from is 1-based; a transcript's lines are its messages)." +
      " status=ok: the text was read; not_found: no such file; error: the read failed.",
    parameters: GET_PARAMETERS,
    async execute(_toolCallId, params) {
      const relPath = typeof params?.path === "string" ? params.path : "";
      const corpus = params?.corpus;
      if (corpus !== undefined && !["memory", "wiki", "all"].includes(corpus)) {
        return jsonResult({ status: "error", path: relPath, text: "", error: "corpus must be one of: memory, wiki, all" });
      }
      if (corpus === "wiki" || corpus === "all") {
        const got = await readWiki({
          relPath,
          from: param(params, "from"),
          lines: param(params, "lines"),
          agentId,
          agentSessionKey: ctx.sessionKey,
          sandboxed: Boolean(ctx.sandboxed),
        }).catch((err) => ({ outcome: "unavailable", error: err.message, result: null }));
        if (got.result) return jsonResult(got.result);
        if (corpus === "wiki") {
          return jsonResult({
            status: got.outcome === "not-registered" ? "not_found" : "error",
            path: relPath,
            text: "",
            ...corpusMetadata([{ corpus: "wiki", outcome: got.outcome, error: got.error }]),
          });
        }
      }
      const isSession = relPath.replace(/\\/g, "/").startsWith("sessions/");
      if (isSession && ctx.sandboxed) {
        return jsonResult({
          status: "error",
          path: relPath,
          text: "",
          error: "session transcripts are not readable from a sandboxed run",
        });
      }
      if (isSession) {
        // the same visibility as a search hit of that transcript (src/visibility.js)
        const hit = { path: relPath.replace(/\\/g, "/"), source: "sessions" };
        const shown = await filterHits({
          cfg: toolConfig(ctx),
          agentId,
          requesterSessionKey: ctx.sessionKey,
          sandboxed: Boolean(ctx.sandboxed),
          conversationRecall: ctx.conversationRecall ?? null,
          hits: [hit],
        });
        if (!shown.length) {
          return jsonResult({
            status: "error",
            path: relPath,
            text: "",
            error: "this session transcript is not visible from this conversation",
          });
        }
      }
      try {
        const manager = await pool.get(agentId);
        return jsonResult(
          await manager.readFile({ relPath, from: param(params, "from"), lines: param(params, "lines") }),
        );
      } catch (err) {
        return jsonResult({ status: "error", path: relPath, text: "", error: err.message });
      }
    },
  };
}
