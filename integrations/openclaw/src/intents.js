// @ts-check
// Standing intents with memindex in the memory slot: the agent's `intent` tool
// (create / list / cancel event-conditioned intents) and, when memory-core is not
// loaded (dreaming off), the matcher that injects an armed intent into a user turn
// and the sweep on heartbeat and cron turns. Both are memory-core's own code
// (src/host.js: loaded only on an OpenClaw release memindex was checked against);
// with dreaming on, memory-core's matcher and sweep run as they always do, and only
// its tool, denied with the rest of memory-core's tools, is given back.
import { normalizeAgentId, sessionKeyAgent, configuredAgents } from "./agents.js";
import { openclawInternals } from "./host.js";

/** @import { HookAgentContext, HostInternals, OpenClawConfig, PluginApi, ToolContext } from "../types/host.js" */

/**
 * @param {ToolContext | HookAgentContext} ctx
 * @param {OpenClawConfig} cfg
 */
function agentOf(ctx, cfg) {
  return normalizeAgentId(ctx.agentId ?? sessionKeyAgent(ctx.sessionKey) ?? configuredAgents(cfg)[0]);
}

// The tool's contract as OpenClaw 2026.9.6 offers it to the model; the work is done
// by memory-core's own tool, loaded at the first call (loading it when the plugin
// registers would keep every `openclaw` CLI process alive for a minute).
const INTENT_PARAMETERS = {
  type: "object",
  properties: {
    action: { type: "string", enum: ["create", "list", "cancel"] },
    id: { type: "string" },
    description: { type: "string" },
    triggerKeywords: { type: "array", items: { type: "string" } },
    scope: { type: "string", enum: ["conversation", "channel", "anywhere"], default: "channel" },
    senderScope: { type: "string", enum: ["sender", "anyone"], default: "sender" },
    expiresAt: { type: "string" },
    maxFires: { type: "integer", minimum: 1 },
    cooldownSeconds: { type: "integer", minimum: 0 },
    status: { type: "string", enum: ["pending", "armed", "fired", "done", "cancelled", "expired"] },
  },
  required: ["action"],
  additionalProperties: false,
};

/**
 * Register the intent tool (and, ``withHooks``, the matcher and sweep).
 * @param {PluginApi} api
 * @param {{ withHooks: boolean }} opts
 */
export function registerIntents(api, { withHooks }) {
  /** @type {Promise<HostInternals | null> | null} */
  let loading = null;
  /** @type {string | null} */
  let said = null; // the problem last logged: a late load looked at again is not a new one
  const load = () =>
    (loading ??= openclawInternals().then((got) => {
      if (!got.modules) {
        const problem = `memindex: standing intents are not served: ${got.problem}`;
        if (problem !== said) api.logger.warn(problem);
        said = problem;
        if (got.late) loading = null; // still loading: the next turn looks again
      }
      return got.modules;
    }));
  api.registerTool(
    {
      contextVersion: 2,
      create: (ctx) => {
        if (ctx.senderIsOwner !== true) return null;
        const cfg = ctx.getRuntimeConfig?.() ?? ctx.runtimeConfig ?? ctx.config ?? {};
        const provider = ctx.messageChannel?.trim();
        const senderId = ctx.requesterSenderId?.trim();
        const options = {
          agentId: agentOf(ctx, cfg),
          assertCurrent: ctx.assertInvocationCurrent,
          ...(ctx.sessionId ? { sourceSessionId: ctx.sessionId } : {}),
          ...(ctx.nativeChannelId ? { conversationId: ctx.nativeChannelId } : {}),
          ...(provider ? { provider } : {}),
          ...(ctx.agentAccountId ? { accountId: ctx.agentAccountId } : {}),
          ...(senderId ? { senderId } : {}),
        };
        return {
          label: "Standing Intent",
          name: "intent",
          description:
            "Create, list, or explicitly cancel event-conditioned standing intents. A created" +
            " intent is armed; the system injects the reminder automatically when it triggers." +
            " Do not deliver it early or cancel it unless the user asks. Use scheduled tasks" +
            " for time-based reminders.",
          parameters: INTENT_PARAMETERS,
          async execute(toolCallId, params, signal, onUpdate) {
            const modules = await load();
            if (!modules?.intentTool) {
              return {
                content: [{ type: "text", text: "Standing intents are unavailable." }],
                details: { error: "standing intents are unavailable with this OpenClaw" },
              };
            }
            return modules.intentTool
              .createStandingIntentTool(options)
              .execute(toolCallId, params, signal, onUpdate);
          },
        };
      },
    },
    { names: ["intent"] },
  );
  if (!withHooks) return;
  api.on("before_prompt_build", async (event, ctx) => {
    if (ctx.trigger !== "user") return undefined;
    const intents = (await load())?.intents;
    if (!intents) return undefined;
    try {
      const invocation = ctx.hookInvocation;
      if (!invocation) return undefined;
      invocation.assertActive();
      if (!intents.isEligibleStandingIntentTurn(ctx)) return undefined;
      const cfg = api.runtime?.config?.current?.() ?? api.config ?? {};
      const found = await intents.matchStandingIntents({
        agentId: agentOf(ctx, cfg),
        prompt: event.prompt,
        assertCurrent: invocation.assertActive,
        ...((ctx.channelId ?? ctx.chatId) ? { channel: ctx.channelId ?? ctx.chatId } : {}),
        ...((ctx.channel ?? ctx.messageProvider) ? { provider: ctx.channel ?? ctx.messageProvider } : {}),
        ...(ctx.accountId ? { accountId: ctx.accountId } : {}),
        ...(ctx.senderId ? { senderId: ctx.senderId } : {}),
      });
      const prependContext = intents.buildStandingIntentContext(found);
      return prependContext ? { prependContext } : undefined;
    } catch (err) {
      api.logger.warn?.(`memindex: standing intent matching failed: ${err?.message ?? err}`);
      return undefined;
    }
  });
  api.on(
    "before_agent_reply",
    async (_event, ctx) => {
      if (ctx.trigger !== "heartbeat" && ctx.trigger !== "cron") return;
      try {
        const cfg = api.runtime?.config?.current?.() ?? api.config ?? {};
        await (await load())?.intents?.sweepStandingIntents({ agentId: agentOf(ctx, cfg) });
      } catch (err) {
        api.logger.warn?.(`memindex: standing intent maintenance failed: ${err?.message ?? err}`);
      }
    },
    { eligibleTriggers: ["heartbeat", "cron"] },
  );
}
