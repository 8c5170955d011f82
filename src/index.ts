/**
 * troupe's public API. Explicit named exports only: what is not listed here
 * is internal and may change.
 */

export type { AgentConfig, AgentResult, RunOptions } from './agent/agent.js';
export { Agent } from './agent/agent.js';
export type { BudgetState, TokenBudgetLimits } from './agent/budget.js';
export { TokenBudget } from './agent/budget.js';
export type { CompressionOptions } from './agent/history.js';
export { closePendingToolCalls, estimateTokens } from './agent/history.js';
export type { ErrorCode, SerializedError } from './errors.js';
export {
  deserializeError,
  ERROR_CODES,
  errorMessage,
  isTroupeError,
  SerializedErrorSchema,
  serializeError,
  TroupeError,
} from './errors.js';
export type { EventBusOptions, Unsubscribe } from './events/bus.js';
export { EventBus, waitForEvent } from './events/bus.js';
export type { FollowTraceOptions } from './events/follow.js';
export { followTrace } from './events/follow.js';
export type {
  AgentEvent,
  AgentEventType,
  AgentStatus,
  AgentStopReason,
  EventEnvelope,
  EventOf,
  EventPayload,
  EventSink,
  RunStatus,
  Step,
  UnsequencedEvent,
} from './events/schema.js';
export { AgentEventSchema, EVENT_TYPES, parseEvent } from './events/schema.js';
export type { TraceContents, TraceWriterOptions } from './events/trace.js';
export { parseTrace, readTrace, TraceWriter } from './events/trace.js';
export type { CoordinatorOptions, JobOptions, JobResult } from './job/coordinator.js';
export { COORDINATOR_ID, createCoordinator, runJob } from './job/coordinator.js';
export type { PipelineOptions, PipelineResult } from './job/pipeline.js';
export { runPipeline } from './job/pipeline.js';
// MCP servers as tool sources.
export type { AttachedMcpTools } from './mcp/agent-tools.js';
export { attachMcpTools } from './mcp/agent-tools.js';
export type {
  McpHttpServer,
  McpRoleAccess,
  McpServerConfig,
  McpServers,
  McpStdioServer,
  McpTroupeSettings,
} from './mcp/config.js';
export {
  loadMcpConfig,
  McpServerConfigSchema,
  parseMcpConfig,
  serverTiers,
} from './mcp/config.js';
export type { McpHubOptions } from './mcp/hub.js';
export { McpHub } from './mcp/hub.js';
export { mcpToolName } from './mcp/mcp-tool.js';
export { McpToolRegistry } from './mcp/tool-registry.js';
export type {
  AnthropicSpec,
  Model,
  ModelSpec,
  OfflineSpec,
  OpenAISpec,
  ScriptedSpec,
} from './model/model.js';
export { createModel, describeModel, ModelSpecSchema } from './model/model.js';
export { AnthropicModel } from './model/providers/anthropic.js';
export { OFFLINE_DELAY_ENV, OFFLINE_MODEL_NAME, OfflineModel } from './model/providers/offline.js';
export { OpenAIModel } from './model/providers/openai.js';
export { redactSpec } from './model/providers/redact-spec.js';
export type { ScriptedCall } from './model/providers/scripted.js';
export { ScriptedModel } from './model/providers/scripted.js';
export type { Script, ScriptMatch, ScriptStep } from './model/script.js';
export { ScriptSchema } from './model/script.js';
export type {
  AssistantMessage,
  Message,
  ModelCallOptions,
  ModelRequest,
  ModelResponse,
  ModelStreamPart,
  ThinkingPart,
  ToolCall,
  ToolMessage,
  ToolSchema,
  Usage,
} from './model/types.js';
export { addUsage, emptyUsage, MessageSchema, totalTokens } from './model/types.js';
// Observability: OpenTelemetry GenAI spans and the one-file HTML timeline.
export { renderTimelineHtml, TIMELINE_FILE, writeTimelineHtml } from './observe/html-timeline.js';
export type { OtelEndpoint } from './observe/otel-config.js';
export { resolveOtelEndpoint } from './observe/otel-config.js';
export type { OtelExport, OtelExportOptions, OtelExportReport } from './observe/otel-exporter.js';
export { exportEventsToOtel, exportToOtel } from './observe/otel-exporter.js';
export type { TimelineData, TimelineOptions, TimelinePrice } from './observe/timeline-model.js';
export { buildTimeline } from './observe/timeline-model.js';
export { JsonRenderer } from './render/json.js';
export type { LineRendererOptions } from './render/lines.js';
export { formatEventLine, LineRenderer } from './render/lines.js';
export type { LiveRendererOptions } from './render/live.js';
export { LiveRenderer } from './render/live.js';
export type { EventRenderer } from './render/renderer.js';
export type { AgentView, PriceFunction } from './render/run-state.js';
export { RunState } from './render/run-state.js';
export { summaryLines } from './render/summary.js';
export type { Palette, TerminalOutput } from './render/terminal.js';
export {
  createPalette,
  createTerminalOutput,
  FrameWriter,
  supportsColor,
} from './render/terminal.js';
// The actor runtime, channels and roles.
export type { Finding } from './roles/builtin.js';
export {
  analyst,
  builtinRoles,
  FindingSchema,
  findingsChannel,
  reporter,
  researcher,
} from './roles/builtin.js';
export type { AnyChannel, Channel, ChannelSpec } from './roles/channel.js';
export { defineChannel, formatChannelClosed, formatChannelMessage } from './roles/channel.js';
export type { DelegateInput, DelegationPolicy } from './roles/delegation-tools.js';
export type { AnyRole, RetryPolicy, Role, RoleDefinition } from './roles/role.js';
export { DEFAULT_RETRY, defineRole, isRole } from './roles/role.js';
export type { ActorResult, AgentRef, SpawnOptions } from './runtime/actors/actor.js';
export type { BudgetCrossing, TreeBudgetLimits } from './runtime/budget/tree-budget.js';
export type { ModelPrice, UsageTotals } from './runtime/budget/usage-ledger.js';
export type { MailboxOptions, OverflowPolicy } from './runtime/messaging/mailbox.js';
export { Runtime } from './runtime/runtime.js';
export type { RuntimeOptions, ThreadLimits } from './runtime/runtime-options.js';
export type { LocalTransportOptions } from './runtime/wire/local-transport.js';
export { LocalTransport } from './runtime/wire/local-transport.js';
export type { Transport, TransportHandlers } from './runtime/wire/transport.js';
export type { FetchToolOptions, HostResolver, ResolvedAddress } from './tools/builtin/fetch.js';
export { createFetchTool, fetchUrlTool } from './tools/builtin/fetch.js';
export { listDirTool } from './tools/builtin/list-dir.js';
export type { PythonToolOptions } from './tools/builtin/python.js';
export { createPythonTool, pythonTool } from './tools/builtin/python.js';
export { readFileTool } from './tools/builtin/read-file.js';
export type { SearchFilesToolOptions } from './tools/builtin/search-files.js';
export { createSearchFilesTool, searchFilesTool } from './tools/builtin/search-files.js';
export type { ShellToolOptions } from './tools/builtin/shell.js';
export { createShellTool, shellTool } from './tools/builtin/shell.js';
export type { ShellPolicy } from './tools/builtin/shell-policy.js';
export {
  DEFAULT_GIT_SUBCOMMANDS,
  DEFAULT_SHELL_POLICY,
  DEFAULT_SHELL_PROGRAMS,
} from './tools/builtin/shell-policy.js';
export type { WriteFileToolOptions } from './tools/builtin/write-file.js';
export { createWriteFileTool, writeFileTool } from './tools/builtin/write-file.js';
export type {
  BuiltinRegistryOptions,
  BuiltinToolName,
  BuiltinToolOptions,
} from './tools/catalogue.js';
export {
  BUILTIN_TOOL_TIERS,
  builtinTool,
  builtinToolNames,
  builtinTools,
  createBuiltinRegistry,
  isBuiltinToolName,
  requiredTiers,
} from './tools/catalogue.js';
export type { OsSandboxOptions, SandboxStatus } from './tools/os-sandbox.js';
export { probeSandbox, SANDBOX_INSTALL_HINT } from './tools/os-sandbox.js';
export type { RunGrants } from './tools/permissions.js';
export {
  ALLOW_FLAG,
  assertRoleGranted,
  DEFAULT_GRANTS,
  PERMISSION_TIERS,
  parseTiers,
  resolveGrants,
} from './tools/permissions.js';
export type { ToolRegistryOptions, ToolResult } from './tools/registry.js';
export { ToolRegistry } from './tools/registry.js';
export type { PathScope, ResolvedPath } from './tools/sandbox.js';
export { resolveInScope } from './tools/sandbox.js';
export { scrubEnv } from './tools/scrub-env.js';
export type {
  AnyTool,
  ApprovalRequest,
  PermissionTier,
  Tool,
  ToolContext,
  ToolDefinition,
} from './tools/tool.js';
export { defineTool, PermissionTierSchema } from './tools/tool.js';
export { createRunId } from './util/ids.js';
export { truncateMiddle } from './util/truncate.js';
