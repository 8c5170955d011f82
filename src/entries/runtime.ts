/**
 * `troupe/runtime`: what builds on the runtime rather than with it — the
 * transport interface, mailbox and budget types, the coordinator as an
 * actor, the agent loop's budget and history helpers, the event schema and
 * error (de)serialisation for code that crosses its own process boundary,
 * and the run journal (durable runs: resume without paying twice).
 */

export type { BudgetState, TokenBudgetLimits } from '../agent/budget.js';
export { TokenBudget } from '../agent/budget.js';
export type { CompressionOptions } from '../agent/history.js';
export { closePendingToolCalls, estimateTokens } from '../agent/history.js';
export type { AgentJournal, JournalEntry } from '../agent/journal.js';
export { INTERRUPTED_RESULT, JournalEntrySchema, requestHash } from '../agent/journal.js';
export { deserializeError, SerializedErrorSchema, serializeError } from '../errors.js';
export type {
  EventEnvelope,
  EventPayload,
  EventSink,
  Step,
  UnsequencedEvent,
} from '../events/schema.js';
export { AgentEventSchema } from '../events/schema.js';
export { parseTrace } from '../events/trace.js';
export type { CoordinatorOptions } from '../job/coordinator.js';
export { COORDINATOR_ID, createCoordinator } from '../job/coordinator.js';
export type { AnyChannel, ChannelSpec } from '../roles/channel.js';
export { formatChannelClosed, formatChannelMessage } from '../roles/channel.js';
export type { DelegateInput, DelegationPolicy } from '../roles/delegation-tools.js';
export type { AnyRole, RetryPolicy } from '../roles/role.js';
export { DEFAULT_RETRY, isRole } from '../roles/role.js';
export type { BudgetCrossing, TreeBudgetLimits } from '../runtime/budget/tree-budget.js';
export type { ModelPrice, UsageTotals } from '../runtime/budget/usage-ledger.js';
export type { MailboxOptions, OverflowPolicy } from '../runtime/messaging/mailbox.js';
export type { NatsRunOptions } from '../runtime/nats-setup.js';
export {
  createNatsTransport,
  listNodes,
  openNatsJournalMirror,
  restoreRunJournal,
  startWorkerNode,
} from '../runtime/nats-setup.js';
export type {
  Journal,
  JournalContents,
  JournalFileMirror,
  JournalNote,
} from '../runtime/resume/journal.js';
export { FileJournal, readJournal } from '../runtime/resume/journal.js';
export type { ThreadLimits } from '../runtime/runtime-options.js';
export type { LocalTransportOptions } from '../runtime/wire/local-transport.js';
export { LocalTransport } from '../runtime/wire/local-transport.js';
export type { Transport, TransportHandlers } from '../runtime/wire/transport.js';
