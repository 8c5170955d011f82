/**
 * troupe's public API: what a user builds a multi-agent job with. Explicit
 * named exports only; what is listed neither here nor in a subpath entry
 * (`troupe/tools`, `troupe/models`, `troupe/testing`, `troupe/runtime`,
 * `troupe/render`, `troupe/observe`, `troupe/mcp`) is internal and may change.
 */

// The agent loop.
export type { AgentConfig, AgentResult, RunOptions } from './agent/agent.js';
export { Agent } from './agent/agent.js';
// Errors: every failure is a TroupeError with a stable code.
export type { ErrorCode, SerializedError } from './errors.js';
export { ERROR_CODES, errorMessage, isTroupeError, TroupeError } from './errors.js';
// The event stream and its trace.
export type { EventBusOptions, Unsubscribe } from './events/bus.js';
export { EventBus, waitForEvent } from './events/bus.js';
export type { FollowTraceOptions } from './events/follow.js';
export { followTrace } from './events/follow.js';
export type {
  AgentEvent,
  AgentEventType,
  AgentStatus,
  AgentStopReason,
  EventOf,
  RunStatus,
} from './events/schema.js';
export { EVENT_TYPES, parseEvent } from './events/schema.js';
export type { TraceContents, TraceWriterOptions } from './events/trace.js';
export { readTrace, TraceWriter } from './events/trace.js';
// Jobs: a whole run with its folder, trace and journal; the coordinator; channel pipelines.
export type { JobOptions, JobResult } from './job/coordinator.js';
export { runJob } from './job/coordinator.js';
export type { PipelineOptions, PipelineResult } from './job/pipeline.js';
export { runPipeline } from './job/pipeline.js';
export type { RunOutcome, RunPaths, RunSession, StartRunOptions } from './job/run-session.js';
export { startRun } from './job/run-session.js';
// Models.
export type { Model, ModelSpec } from './model/model.js';
export { createModel } from './model/model.js';
export type { Message, ToolCall, Usage } from './model/types.js';
// Roles and channels, and the built-in research → analysis → report roles.
export type { Finding } from './roles/builtin.js';
export {
  analyst,
  builtinRoles,
  FindingSchema,
  findingsChannel,
  reporter,
  researcher,
} from './roles/builtin.js';
export type { Channel } from './roles/channel.js';
export { defineChannel } from './roles/channel.js';
export type { Role, RoleDefinition, RoleTool, RoleToolName, UserToolName } from './roles/role.js';
export { defineRole, userTool } from './roles/role.js';
// The actor runtime.
export type { ActorResult, AgentRef, SpawnOptions } from './runtime/actors/actor.js';
export { Runtime } from './runtime/runtime.js';
export type { RuntimeOptions } from './runtime/runtime-options.js';
export type { RunGrants } from './tools/permissions.js';
export { DEFAULT_GRANTS } from './tools/permissions.js';
// Tools.
export type { ToolResult } from './tools/registry.js';
export { ToolRegistry } from './tools/registry.js';
export type { PermissionTier, Tool, ToolContext } from './tools/tool.js';
export { defineTool } from './tools/tool.js';
export { createRunId } from './util/ids.js';
