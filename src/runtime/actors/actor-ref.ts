import { plainError, TroupeError } from '../../errors.js';
import type { ActorRecord, ActorResult, AgentRef } from './actor.js';

/** What a ref does through the runtime. */
export interface RefOperations {
  /** Delivers a steering message; resolves with its number among the actor's delivered messages. */
  steer(record: ActorRecord, message: string): Promise<number>;
  cancel(record: ActorRecord, reason: string): void;
}

const DEFAULT_ASK_TIMEOUT_MS = 60_000;

/** The handle a spawn returns for a live actor. */
export function createAgentRef(record: ActorRecord, operations: RefOperations): AgentRef {
  return {
    id: record.id,
    role: record.role.name,
    result: record.result,
    send: async (message) => {
      await operations.steer(record, message);
    },
    ask: async (message, options = {}) => {
      const needed = await operations.steer(record, message);
      const answer = record.waitForTurn(needed);
      const timeoutMs = options.timeoutMs ?? DEFAULT_ASK_TIMEOUT_MS;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new TroupeError('timeout', `${record.id} did not answer within ${timeoutMs} ms.`),
            ),
          timeoutMs,
        );
      });
      try {
        return await Promise.race([answer, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel: (reason = 'cancelled by its parent') => operations.cancel(record, reason),
  };
}

/** The handle of a spawn answered from an earlier run's stored result. */
export function reusedRef(id: string, stored: ActorResult): AgentRef {
  const result: ActorResult = { ...stored, agentId: id, reused: true };
  const refuse = (): Promise<never> =>
    Promise.reject(
      new TroupeError(
        'runtime.closed',
        `${id} was reused from an earlier run; it takes no messages.`,
      ),
    );
  return {
    id,
    role: stored.role,
    result: Promise.resolve(result),
    send: refuse,
    ask: refuse,
    cancel: () => {},
  };
}

/** The handle of a spawn that never became an actor (an unknown role in a batch). */
export function refusedRef(role: string, error: TroupeError): AgentRef {
  const result: ActorResult = {
    agentId: '(not started)',
    role,
    status: 'failed',
    final: '',
    error: plainError(error),
    usage: { inputTokens: 0, outputTokens: 0 },
    steps: 0,
  };
  const refuse = (): Promise<never> => Promise.reject(error);
  return {
    id: result.agentId,
    role,
    result: Promise.resolve(result),
    send: refuse,
    ask: refuse,
    cancel: () => {},
  };
}
