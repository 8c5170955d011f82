import type { AgentResult } from '../agent/agent.js';
import { plainError, type SerializedError, TroupeError } from '../errors.js';
import type { RunStatus } from '../events/schema.js';
import type { ActorResult } from '../runtime/actors/actor.js';
import type { BudgetCrossing } from '../runtime/budget/tree-budget.js';
import { humanDuration } from '../util/duration.js';
import { groupDigits } from '../util/text-order.js';

/**
 * What a run came to, honestly:
 *
 * - `completed`: a final answer, and every sub-agent the run depended on completed;
 * - `partial`: a final answer, but some sub-agents failed or were cancelled
 *   (other than by an explicit policy, or redone by a later sub-agent that completed);
 * - `failed`: no final answer, or sub-agents ran and none of them succeeded;
 * - `cancelled`: the caller stopped it (Ctrl-C, SIGTERM, its signal);
 * - `budget`: the tree's token or cost budget ran out;
 * - `timed_out`: the run's time limit was reached.
 */
export interface RunOutcomeFacts {
  /** The coordinator's run threw (no result at all). */
  failure: unknown;
  /** The caller's signal aborted. */
  aborted: boolean;
  /** The first hard limit of the tree budget reached, if any. */
  crossing: BudgetCrossing | undefined;
  result: AgentResult | undefined;
  /** The sub-agents the run depended on: those the coordinator started, minus the excused. */
  depended: readonly ActorResult[];
  /** What the whole tree spent, for the budget's message. */
  spent?: { tokens: number; costUsd: number } | undefined;
}

/** The run's status from what happened. */
export function decideRunStatus(facts: RunOutcomeFacts): RunStatus {
  const { failure, aborted, crossing, result } = facts;
  if (failure !== undefined) return 'failed';
  if (aborted) return 'cancelled';
  if (crossing?.metric === 'time') return 'timed_out';
  if (crossing !== undefined || result?.stopReason === 'budget') return 'budget';
  if (result?.stopReason === 'cancelled') return 'cancelled';
  if (result?.stopReason !== 'final') return 'failed';
  const unfinished = facts.depended.filter((child) => child.status !== 'completed');
  if (unfinished.length === 0) return 'completed';
  return unfinished.length === facts.depended.length ? 'failed' : 'partial';
}

/** The run's error (message only: no stack, no details), unless it completed. */
export function runError(
  status: RunStatus,
  facts: RunOutcomeFacts,
): Pick<SerializedError, 'name' | 'code' | 'message'> | undefined {
  if (status === 'completed') return undefined;
  const { failure, result, crossing } = facts;
  const unfinished = facts.depended.filter((child) => child.status !== 'completed');
  let error: SerializedError;
  if (failure !== undefined) error = plainError(failure);
  else if (status === 'timed_out' && crossing !== undefined)
    error = plainError(
      new TroupeError(
        'timeout',
        `The run reached its time limit of ${humanDuration(crossing.limit)} and was stopped.`,
      ),
    );
  else if (status === 'budget' && crossing !== undefined && facts.spent !== undefined)
    error = plainError(new TroupeError('budget.exceeded', budgetMessage(crossing, facts.spent)));
  else if (result?.error !== undefined) error = result.error;
  else if (status === 'budget')
    error = plainError(new TroupeError('budget.exceeded', 'The run stopped at its budget.'));
  else if (status === 'cancelled')
    error = plainError(new TroupeError('cancelled', 'The run was cancelled.'));
  else if ((status === 'partial' || status === 'failed') && result?.stopReason === 'final')
    error = plainError(
      new TroupeError(
        'run.partial',
        `${status === 'failed' ? 'No' : `${unfinished.length} of ${facts.depended.length}`} sub-agent${facts.depended.length === 1 ? '' : 's'} ${status === 'failed' ? 'completed' : 'did not complete'}: ${unfinished.map((child) => `${child.agentId} ${child.status.replace('_', ' ')}`).join(', ')}.`,
      ),
    );
  else {
    error = plainError(
      new TroupeError(
        'internal',
        `The coordinator stopped (${result?.stopReason ?? 'unknown'}) without a final answer.`,
      ),
    );
  }
  return { name: error.name, code: error.code, message: error.message };
}

// "The run stopped at its token budget: 19,512 of 20,000 tokens used."
function budgetMessage(
  crossing: BudgetCrossing,
  spent: { tokens: number; costUsd: number },
): string {
  if (crossing.metric === 'cost')
    return `The run stopped at its cost budget: $${spent.costUsd.toFixed(4)} of $${crossing.limit.toFixed(4)} spent.`;
  const count = (value: number): string => groupDigits(Math.round(value));
  return `The run stopped at its token budget: ${count(spent.tokens)} of ${count(crossing.limit)} tokens used.`;
}
