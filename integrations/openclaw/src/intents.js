// Standing intents with memindex in the memory slot: the agent's `intent` tool
// (create / list / cancel event-conditioned intents) and, when memory-core is not
// loaded (dreaming off), the matcher that injects an armed intent into a user turn
// and the sweep on heartbeat and cron turns. Both are memory-core's own code
// (src/internals.js: loaded only on the OpenClaw release memindex was tested with);
// with dreaming on, memory-core's matcher and sweep run as they always do, and only
// its tool, denied with the rest of memory-core's tools, is given back.
import { normalizeAgentId, sessionKeyAgent, configuredAgents } from "./agents.js";
import { openclawInternals } from "./internals.js";

function agentOf(ctx, cfg) {
  return normalizeAgentId(ctx.agentId ?? sessionKeyAgent(ctx.sessionKey) ?? configuredAgents(cfg)[0]);
}

/** Register the intent tool (and, ``withHooks``, the matcher and sweep). */
export function registerIntents(api, { withHooks }) {
  let modules = null;
  const ready = openclawInternals().then((got) => {
    modules = got.modules;
    if (!modules) api.logger.warn(`memindex: standing intents are not served: ${got.problem}`);
  });
  api.registerTool(
    {
      contextVersion: 2,
      create: (ctx) => {
        if (ctx.senderIsOwner !== true || !modules?.intentTool) return null;
        const cfg = ctx.getRuntimeConfig?.() ?? ctx.runtimeConfig ?? ctx.config ?? {};
        const provider = ctx.messageChannel?.trim();
        const senderId = ctx.requesterSenderId?.trim();
        return modules.intentTool.createStandingIntentTool({
          agentId: agentOf(ctx, cfg),
          assertCurrent: ctx.assertInvocationCurrent,
          ...(ctx.sessionId ? { sourceSessionId: ctx.sessionId } : {}),
          ...(ctx.nativeChannelId ? { conversationId: ctx.nativeChannelId } : {}),
          ...(provider ? { provider } : {}),
          ...(ctx.agentAccountId ? { accountId: ctx.agentAccountId } : {}),
          ...(senderId ? { senderId } : {}),
        });
      },
    },
    { names: ["intent"] },
  );
  if (!withHooks) return ready;
  api.on("before_prompt_build", async (event, ctx) => {
    if (ctx.trigger !== "user") return undefined;
    await ready;
    const intents = modules?.intents;
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
      await ready;
      try {
        const cfg = api.runtime?.config?.current?.() ?? api.config ?? {};
        await modules?.intents?.sweepStandingIntents({ agentId: agentOf(ctx, cfg) });
      } catch (err) {
        api.logger.warn?.(`memindex: standing intent maintenance failed: ${err?.message ?? err}`);
      }
    },
    { eligibleTriggers: ["heartbeat", "cron"] },
  );
  return ready;
}
