// The OpenClaw modules src/host.js loads, as OpenClaw 2026.9.6 has them: its plugin SDK
// (`openclaw/plugin-sdk/<name>`) and memory-core's internal files (`TESTED` in
// src/host.js), the members memindex calls. From the installed package's dist/*.d.ts,
// and from its JS where an SDK module has no .d.ts (session-visibility,
// session-transcript-hit, memory-core-host-runtime-core and others); memory-core's
// internal files have none. Type-only.
import type {
  AgentTool,
  HookAgentContext,
  MemoryOriginClass,
  MemoryPluginPublicArtifact,
  MemorySearchResult,
  OpenClawConfig,
} from "./host.js";

// ---- the SDK modules (openclaw/plugin-sdk/<name>) ----

export interface MemoryCorpusSearchResult {
  corpus: string;
  path: string;
  title?: string;
  kind?: string;
  score: number;
  snippet: string;
  startLine?: number;
  endLine?: number;
  citation?: string;
  source?: string;
}

export interface MemoryCorpusGetResult {
  corpus: string;
  path: string;
  title?: string;
  kind?: string;
  content: string;
  fromLine: number;
  lineCount: number;
}

export interface MemoryCorpusSupplement {
  search(params: {
    query: string;
    maxResults?: number;
    agentId?: string;
    agentSessionKey?: string;
    sandboxed?: boolean;
  }): Promise<MemoryCorpusSearchResult[]>;
  get(params: {
    lookup: string;
    fromLine?: number;
    lineCount?: number;
    agentId?: string;
    agentSessionKey?: string;
    sandboxed?: boolean;
  }): Promise<MemoryCorpusGetResult | null>;
}

/** What OpenClaw recorded of a workspace memory file's last write. */
export interface MemoryArtifactProvenance {
  fileHash?: string;
  originClass: MemoryOriginClass;
  observedAt?: number;
  sessionId?: string;
  sessionKey?: string;
}

/** A session store row (SessionEntry), as far as memindex reads it. */
export interface SessionEntry {
  sessionId?: string;
  sessionFile?: string;
  chatType?: string;
  [key: string]: unknown;
}

export type SessionStore = Record<string, SessionEntry>;

export interface TranscriptIdentity {
  stem: string;
  ownerAgentId?: string;
  archived: boolean;
}

export interface ArchivedSession {
  archiveName: string;
  sessionId: string;
  sessionKey?: string;
  createdAt?: number;
  agentId?: string;
}

export interface SessionVisibilityGuard {
  check(key: string): { allowed: boolean; [key: string]: unknown };
}

/** openclaw/plugin-sdk/memory-host-core */
export interface MemoryHostCoreModule {
  listMemoryHostPublicArtifacts(params: { cfg: OpenClawConfig }): Promise<MemoryPluginPublicArtifact[]>;
}

/** openclaw/plugin-sdk/memory-core-host-runtime-core */
export interface MemoryCoreHostRuntimeCoreModule {
  listMemoryCorpusSupplements(): Array<{ pluginId: string; supplement: MemoryCorpusSupplement }>;
  readMemoryArtifactProvenance(params: {
    workspaceDir: string;
    relativePath: string;
  }): Promise<MemoryArtifactProvenance | undefined>;
  listMemoryArtifactProvenance?(params: {
    workspaceDir: string;
  }): Promise<Array<{ relativePath: string; provenance: MemoryArtifactProvenance }>>;
  parseAgentSessionKey?(sessionKey: string): { agentId: string; rest?: string } | null | undefined;
  resolveDefaultAgentId(cfg: OpenClawConfig): string;
  resolveCanonicalMainSessionKey(params: { agentId: string; mainKey?: string; sessionScope?: string }): string;
}

/** openclaw/plugin-sdk/session-visibility */
export interface SessionVisibilityModule {
  resolveEffectiveSessionToolsVisibility(params: { cfg: OpenClawConfig; sandboxed: boolean }): string;
  resolveSandboxSessionToolsVisibility(cfg: OpenClawConfig): string;
  createAgentToAgentPolicy(cfg: OpenClawConfig): unknown;
  createSessionVisibilityGuard(params: {
    action: "history" | "list" | string;
    requesterSessionKey: string;
    requesterAgentId?: string;
    mainSessionKey?: string;
    visibility: string;
    a2aPolicy: unknown;
  }): Promise<SessionVisibilityGuard>;
}

/** openclaw/plugin-sdk/session-transcript-hit */
export interface SessionTranscriptHitModule {
  loadCombinedSessionStoreForGateway(
    cfg: OpenClawConfig,
    opts?: { agentId?: string },
  ): { store: SessionStore; storePath: string };
  extractTranscriptIdentityFromSessionsMemoryHit(hitPath: string): TranscriptIdentity | null;
  resolveTranscriptStemToSessionKeys(params: {
    store: SessionStore;
    stem: string;
    archivedOwnerAgentId?: string;
  }): string[];
}

/** openclaw/plugin-sdk/session-store-runtime */
export interface SessionStoreRuntimeModule {
  sessionDeliveryOrigin(entry: SessionEntry | undefined): { chatType?: string; [key: string]: unknown } | undefined;
}

/** openclaw/plugin-sdk/memory-core-host-engine-sessions */
export interface MemoryCoreHostEngineSessionsModule {
  loadArchivedSessions(params: {
    agentId?: string;
    archiveNames?: string[];
    sessionIds?: string[];
    storePath?: string;
  }): ArchivedSession[];
}

export interface KeyedStoreOptions {
  namespace: string;
  maxEntries: number;
  [key: string]: unknown;
}

/** openclaw/plugin-sdk/plugin-state-store-runtime */
export interface PluginStateStoreRuntimeModule {
  createPluginStateKeyedStore(pluginId: string, options: KeyedStoreOptions): unknown;
}

/** The SDK modules memindex imports, by name. */
export interface HostSdk {
  "memory-host-core": MemoryHostCoreModule;
  "memory-core-host-runtime-core": MemoryCoreHostRuntimeCoreModule;
  "session-visibility": SessionVisibilityModule;
  "session-transcript-hit": SessionTranscriptHitModule;
  "session-store-runtime": SessionStoreRuntimeModule;
  "memory-core-host-engine-sessions": MemoryCoreHostEngineSessionsModule;
  "plugin-state-store-runtime": PluginStateStoreRuntimeModule;
}

export type HostSdkName = keyof HostSdk;

// ---- memory-core's internal modules (not in the SDK; TESTED in src/host.js) ----

export interface StandingIntent {
  id: string;
  description: string;
  createdAt: number;
  [key: string]: unknown;
}

/** dist/short-term-promotion-record-*.mjs */
export interface RecallModule {
  recordShortTermRecalls(params: {
    workspaceDir: string;
    query: string;
    results: MemorySearchResult[];
    nowMs?: number;
    timezone?: string;
  }): Promise<void>;
}

/** dist/standing-intents-*.mjs */
export interface IntentsModule {
  isEligibleStandingIntentTurn(ctx: HookAgentContext): boolean;
  matchStandingIntents(params: {
    agentId: string;
    prompt: string;
    assertCurrent?: () => void;
    channel?: string;
    provider?: string;
    accountId?: string;
    senderId?: string;
  }): Promise<StandingIntent[]>;
  buildStandingIntentContext(intents: StandingIntent[]): string | undefined;
  sweepStandingIntents(params: { agentId: string }): Promise<void>;
}

export interface StandingIntentToolOptions {
  agentId: string;
  assertCurrent?: () => void;
  sourceSessionId?: string;
  conversationId?: string;
  provider?: string;
  accountId?: string;
  senderId?: string;
}

/** dist/standing-intents-tool-*.mjs */
export interface IntentToolModule {
  createStandingIntentTool(options: StandingIntentToolOptions): AgentTool;
}

/** dist/dreaming-state-*.mjs */
export interface DreamingStateModule {
  openMemoryCoreStateStore(options: KeyedStoreOptions): unknown;
  configureMemoryCoreDreamingState(open: (options: KeyedStoreOptions) => unknown): void;
}

/** The internal modules memindex loads, by its own name for each. */
export interface HostInternals {
  recall: RecallModule;
  intents: IntentsModule;
  intentTool: IntentToolModule;
  dreamingState: DreamingStateModule;
}
