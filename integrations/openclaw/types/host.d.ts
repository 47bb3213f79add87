// The host surface memindex uses, as OpenClaw 2026.9.6 gives it: the plugin API passed
// to `register(api)`, the SDK modules `src/host.js` imports (`openclaw/plugin-sdk/<name>`),
// and the memory-core modules it loads by file (`TESTED` in src/host.js). Only the
// members the plugin reads are declared, with the shapes of OpenClaw's own types
// (dist/*.d.ts of the installed package; its SDK modules without a .d.ts, such as
// session-visibility, from their JS). Declared here and not imported from OpenClaw:
// the plugin type-checks without OpenClaw beside it (a clean clone; the gateway's
// copy is found at run time), and each member names what memindex depends on.
// Type-only: nothing here exists at run time. The SDK modules and memory-core's
// internals are in sdk.d.ts (re-exported here).

export * from "./sdk.js";

// ---- configuration (openclaw.json): the parts memindex reads ----

// (read-only: OpenClaw gives its config as a readonly object)
export interface AgentEntry {
  readonly id?: string;
  readonly default?: boolean;
  readonly workspace?: string;
  readonly [key: string]: unknown;
}

export interface MemoryFlushSettings {
  readonly enabled?: boolean;
  readonly model?: string;
  readonly softThresholdTokens?: number;
  readonly forceFlushTranscriptBytes?: number | string;
}

export interface OpenClawConfig {
  readonly agents?: {
    readonly defaults?: {
      readonly userTimezone?: string;
      readonly workspace?: string;
      readonly compaction?: { readonly memoryFlush?: MemoryFlushSettings };
      readonly sandbox?: { readonly sessionToolsVisibility?: string };
    };
    readonly list?: readonly AgentEntry[];
    readonly entries?: Readonly<Record<string, AgentEntry>>;
  };
  readonly tools?: { readonly deny?: readonly string[]; readonly sessions?: { readonly visibility?: string } };
  readonly session?: { readonly scope?: string; readonly mainKey?: string };
  readonly memory?: { readonly citations?: string };
  readonly [key: string]: unknown;
}

/** plugins.entries.memindex.config (openclaw.plugin.json's configSchema). */
export interface PluginConfig {
  command?: string | string[];
  socket?: string;
  openclawConfig?: string;
  autoStart?: boolean;
  timeoutMs?: number;
  startTimeoutMs?: number;
  reindexTimeoutMs?: number;
  logFile?: string;
  dreaming?: { enabled?: boolean; timezone?: string; [key: string]: unknown };
  install?: Record<string, unknown>;
}

// ---- memory: hits, provenance, the capability a memory-slot owner registers ----

export type MemorySource = "memory" | "sessions";
export type MemoryOriginClass = "owner" | "agent" | "untrusted" | "system";
export type MemoryCitationsMode = "auto" | "on" | "off";
export type MemorySessionKind = "interactive" | "cron" | "heartbeat" | "subagent" | "unknown";

export interface MemoryEntryProvenance {
  originClass: MemoryOriginClass;
  sessionKind: MemorySessionKind;
  observedAt: number;
  supersedesKey?: string;
}

/** OpenClaw's MemorySearchResult. */
export interface MemorySearchResult {
  path: string;
  startLine: number;
  endLine: number;
  score: number;
  vectorScore?: number;
  textScore?: number;
  snippet: string;
  source: MemorySource;
  importance?: number;
  triggers?: string;
  projectKey?: string;
  citation?: string;
  provenance?: MemoryEntryProvenance;
}

/** Active Memory's bounded private recall (ConversationRecallContext). */
export interface ConversationRecall {
  anchorSessionKey: string;
  scope: "same-agent-private" | string;
  corpus?: "sessions" | "configured" | string;
}

export interface MemoryPromptSectionParams {
  availableTools?: Set<string>;
  citationsMode?: MemoryCitationsMode | string;
  agentId?: string;
  agentSessionKey?: string;
  sandboxed?: boolean;
}

export interface MemoryFlushPlan {
  softThresholdTokens: number;
  forceFlushTranscriptBytes: number;
  reserveTokensFloor: number;
  model?: string;
  prompt: string;
  systemPrompt: string;
  relativePath: string;
}

export interface MemoryFlushPlanParams {
  cfg?: OpenClawConfig;
  nowMs?: number;
  contextWindowTokens?: number;
}

export interface MemoryPluginPublicArtifact {
  kind: string;
  workspaceDir: string;
  relativePath: string;
  absolutePath: string;
  agentIds: string[];
  contentType: "markdown" | "json" | "text";
}

export interface AuthorizeSearchHitsParams {
  cfg?: OpenClawConfig;
  agentId?: string;
  requesterSessionKey?: string;
  sandboxed?: boolean;
  hits: MemorySearchResult[];
  /** Active Memory's private recall (memory_search passes its context's) */
  conversationRecall?: ConversationRecall | null;
  /** the agent's own operator surface (its CLI), with no requesting session */
  trustedAgentScope?: boolean;
}

export interface ClassifyWorkspaceMemoryPathsParams {
  cfg?: OpenClawConfig;
  agentId?: string;
  workspaceDir: string;
  relativePaths: string[];
  readSources?: readonly { relativePath: string; canonicalRelativePath?: string }[];
}

export type MemoryVectorIndexState =
  | { state: "empty" }
  | { state: "complete" }
  | { state: "incomplete" }
  | { state: "unverified" };

/** MemoryProviderStatus (the fields memindex fills). */
export interface MemoryProviderStatus {
  backend: "builtin";
  provider: string;
  model?: string;
  files?: number;
  chunks?: number;
  dirty?: boolean;
  lastSyncError?: string;
  workspaceDir?: string;
  dbPath?: string;
  sources?: MemorySource[];
  sourceCounts?: Array<{ source: MemorySource; files: number; chunks: number }>;
  cache?: { enabled: boolean; entries?: number };
  fts?: { enabled: boolean; available: boolean; error?: string };
  vector?: {
    enabled: boolean;
    index?: MemoryVectorIndexState;
    semanticAvailable?: boolean;
    available?: boolean;
    loadError?: string;
    dims?: number;
  };
  custom?: Record<string, unknown>;
}

export type MemoryReadResult =
  | { status: "ok"; text: string; path: string; truncated?: boolean; from?: number; lines?: number; nextFrom?: number }
  | { status: "not_found"; text: ""; path: string };

export interface MemoryEmbeddingProbeResult {
  ok: boolean;
  error?: string;
  checked?: boolean;
  cached?: boolean;
}

/** MemorySearchManager: what a memory runtime's manager answers (src/manager.js). */
export interface MemorySearchManager {
  search(
    query: string,
    opts?: {
      maxResults?: number;
      minScore?: number;
      lexicalOnly?: boolean;
      activeProjectKeys?: string[];
      sources?: MemorySource[];
      signal?: AbortSignal;
    },
  ): Promise<MemorySearchResult[]>;
  listTriggerCandidates?(opts?: { limit?: number; activeProjectKeys?: string[] }): Promise<MemorySearchResult[]>;
  listCuratedProjectCandidates?(opts: { activeProjectKeys: string[]; limit?: number }): Promise<MemorySearchResult[]>;
  readFile(params: { relPath: string; from?: number; lines?: number }): Promise<MemoryReadResult>;
  status(): MemoryProviderStatus;
  sync?(params?: {
    reason?: string;
    force?: boolean;
    progress?: (update: { completed: number; total: number; label?: string }) => void;
  }): Promise<void>; // (memindex's resolves to its reindex answer, which OpenClaw ignores)
  getCachedEmbeddingAvailability?(): MemoryEmbeddingProbeResult | null;
  probeEmbeddingAvailability(): Promise<MemoryEmbeddingProbeResult>;
  probeVectorStoreAvailability?(): Promise<boolean>;
  probeVectorAvailability(): Promise<boolean>;
  close?(): Promise<void>;
}

/** MemoryPluginRuntime (the members memindex gives). */
export interface MemoryPluginRuntime {
  getMemorySearchManager(params: {
    cfg?: OpenClawConfig;
    agentId: string;
    purpose?: "default" | "status" | "cli";
  }): Promise<{
    manager: MemorySearchManager | null;
    debug?: { backend?: "builtin"; purpose?: "default" | "status" | "cli"; managerMs?: number };
    error?: string;
  }>;
  resolveMemoryBackendConfig(params?: unknown): { backend: "builtin" };
  supportsWorkspaceMemoryReadSources?: true;
  classifyWorkspaceMemoryPaths?(
    params: ClassifyWorkspaceMemoryPathsParams,
  ): Promise<Array<{ relativePath: string; originClass: MemoryOriginClass }>>;
  authorizeSearchHits?(params: AuthorizeSearchHitsParams): Promise<MemorySearchResult[]>;
  closeMemorySearchManager?(params: { cfg?: OpenClawConfig; agentId: string }): Promise<void>;
  closeAllMemorySearchManagers?(): Promise<void>;
}

export interface MemoryPluginCapability {
  promptBuilder?: (params: MemoryPromptSectionParams) => string[];
  flushPlanResolver?: (params: MemoryFlushPlanParams) => MemoryFlushPlan | null;
  runtime?: MemoryPluginRuntime;
  publicArtifacts?: {
    listArtifacts(params: { cfg?: OpenClawConfig }): Promise<MemoryPluginPublicArtifact[]>;
  };
  deterministicRecallToolName?: string;
  supportsPrivateTranscriptRecall?: boolean;
}

// ---- agent tools ----

export interface ToolResult {
  content: Array<{ type: "text"; text: string }>;
  details: unknown;
}

export interface AgentTool {
  name: string;
  label: string;
  description: string;
  /** a JSON Schema object (OpenClaw's TSchema) */
  parameters: object;
  execute(
    toolCallId: string,
    params: any,
    signal?: AbortSignal,
    onUpdate?: (partialResult: ToolResult) => void,
  ): Promise<ToolResult>;
}

/** OpenClawPluginToolContext (version 1; version 2 adds assertInvocationCurrent). */
export interface ToolContext {
  config?: OpenClawConfig;
  runtimeConfig?: OpenClawConfig;
  getRuntimeConfig?: () => OpenClawConfig | undefined;
  workspaceDir?: string;
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  activeProjectKeys?: readonly string[];
  conversationRecall?: ConversationRecall;
  messageChannel?: string;
  agentAccountId?: string;
  nativeChannelId?: string;
  requesterSenderId?: string;
  senderIsOwner?: boolean;
  assertInvocationCurrent?: () => void;
  sandboxed?: boolean;
}

export type ToolFactory = (ctx: ToolContext) => AgentTool | AgentTool[] | null | undefined;

export interface ToolFactoryV2 {
  contextVersion: 2;
  create: (ctx: ToolContext & { assertInvocationCurrent: () => void }) => AgentTool | null | undefined;
}

// ---- hooks ----

/** PluginHookAgentContext. */
export interface HookAgentContext {
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  workspaceDir?: string;
  messageProvider?: string;
  channel?: string;
  accountId?: string;
  chatId?: string;
  senderId?: string;
  trigger?: string;
  channelId?: string;
  readonly hookInvocation?: Readonly<{ assertActive(): void }>;
}

export interface BeforePromptBuildEvent {
  prompt: string;
  messages?: unknown[];
}

// ---- the CLI (commander's Command, as far as memindex calls it) ----

export interface CliCommand {
  command(nameAndArgs: string): CliCommand;
  description(text: string): CliCommand;
  argument(name: string, description?: string): CliCommand;
  option(flags: string, description?: string, defaultValue?: string | boolean | string[]): CliCommand;
  option<T>(flags: string, description: string, parse: (value: string, previous: T) => T, defaultValue?: T): CliCommand;
  allowUnknownOption(allow?: boolean): CliCommand;
  allowExcessArguments(allow?: boolean): CliCommand;
  action(fn: (...args: any[]) => void | Promise<void>): CliCommand;
}

export interface CliContext {
  program: CliCommand;
  config: OpenClawConfig;
  workspaceDir?: string;
  logger: PluginLogger;
}

export interface CliRegistrationOptions {
  parentPath?: readonly string[];
  commands?: readonly string[];
  descriptors?: readonly { name: string; description: string; hasSubcommands: boolean }[];
}

// ---- the plugin API (OpenClawPluginApi, as far as memindex uses it) ----

export interface PluginLogger {
  debug?: (message: string) => void;
  info: (message: string) => void;
  warn: (message: string) => void;
  error: (message: string) => void;
}

export interface GatewayRequestHandlerOptions {
  params?: Record<string, unknown>;
  respond: (ok: boolean, payload?: unknown, error?: { code: string; message: string }) => void;
}

export interface PluginApi {
  id?: string;
  config: OpenClawConfig;
  pluginConfig?: PluginConfig;
  logger: PluginLogger;
  runtime?: { config?: { current?: () => OpenClawConfig | undefined } };
  registerMemoryCapability(capability: MemoryPluginCapability): void;
  registerTool(tool: AgentTool | ToolFactory | ToolFactoryV2, opts?: { name?: string; names?: string[]; optional?: boolean }): void;
  registerCli(registrar: (ctx: CliContext) => void | Promise<void>, opts?: CliRegistrationOptions): void;
  registerGatewayMethod?(
    method: string,
    handler: (opts: GatewayRequestHandlerOptions) => void | Promise<void>,
    opts?: { scope?: string },
  ): void;
  on(hook: "gateway_start", handler: (event: unknown, ctx: unknown) => void | Promise<void>): void;
  on(
    hook: "before_prompt_build",
    handler: (
      event: BeforePromptBuildEvent,
      ctx: HookAgentContext,
    ) => Promise<{ prependContext?: string } | undefined | void>,
  ): void;
  on(
    hook: "before_agent_reply",
    handler: (event: { cleanedBody?: string }, ctx: HookAgentContext) => Promise<void> | void,
    opts?: { eligibleTriggers?: readonly [string, ...string[]] },
  ): void;
}
