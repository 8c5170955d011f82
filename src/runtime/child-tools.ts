import { z } from 'zod';
import { TroupeError } from '../errors.js';
import { type AnyTool, defineTool } from '../tools/tool.js';
import {
  SEND_MESSAGE_DESCRIPTION,
  SPAWN_AGENT_DESCRIPTION,
  WAIT_AGENTS_DESCRIPTION,
} from './children.js';
import { formatDelegationResults } from './delegation.js';
import type { ChildAnswer, ChildRequest } from './protocol.js';

/** What a worker actor's sub-agent tools ask the main thread (for the calling agent). */
export interface ChildRequester {
  child(actorId: string, request: ChildRequest): Promise<ChildAnswer>;
}

async function ask(
  requester: ChildRequester,
  actorId: string,
  request: ChildRequest,
): Promise<ChildAnswer> {
  const answer = await requester.child(actorId, request);
  // A refusal becomes the tool's error result, as the coordinator's tools give it.
  if (!answer.ok) throw new TroupeError(answer.code ?? 'tool.failed', answer.message);
  return answer;
}

/**
 * `spawn_agent`, `wait_agents` and `send_message` for a worker actor whose
 * role may delegate: the coordinator's tools of the same names, round-tripping
 * to the main thread on behalf of the calling agent (its id comes with the
 * call), so one instance serves every actor of the role.
 */
export function childTools(requester: ChildRequester): AnyTool[] {
  return [
    defineTool({
      name: 'spawn_agent',
      description: SPAWN_AGENT_DESCRIPTION,
      parameters: z.object({
        role: z.string().describe('The role of the sub-agent.'),
        task: z.string().describe('The whole task, self-contained.'),
      }),
      execute: async ({ role, task }, context) =>
        (await ask(requester, context.agentId, { op: 'spawn', role, task })).message,
    }),
    defineTool({
      name: 'wait_agents',
      description: WAIT_AGENTS_DESCRIPTION,
      parameters: z.object({
        ids: z.array(z.string()).min(1).describe('Agent ids, e.g. ["researcher-1"].'),
      }),
      execute: async ({ ids }, context) =>
        formatDelegationResults(
          (await ask(requester, context.agentId, { op: 'wait', ids })).results ?? [],
        ),
    }),
    defineTool({
      name: 'send_message',
      description: SEND_MESSAGE_DESCRIPTION,
      parameters: z.object({ agentId: z.string(), message: z.string() }),
      execute: async ({ agentId, message }, context) =>
        (await ask(requester, context.agentId, { op: 'send', agentId, message })).message,
    }),
  ];
}
