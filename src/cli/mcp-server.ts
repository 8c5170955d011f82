import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { AnyRole } from '../roles/role.js';
import { troupePackage } from '../util/package-files.js';
import type { JobBoard, JobSnapshot } from './mcp-jobs.js';

/** What a tool of the troupe MCP server answers. */
interface ToolAnswer {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

function answer(snapshot: JobSnapshot): ToolAnswer {
  const lines = [
    `run ${snapshot.run_id}: ${snapshot.status} (${snapshot.agents_finished}/${snapshot.agents_started} sub-agents finished)`,
    ...(snapshot.answer === undefined || snapshot.answer === '' ? [] : ['', snapshot.answer]),
    ...(snapshot.error === undefined ? [] : ['', `error: ${snapshot.error}`]),
    '',
    ...(snapshot.report_path === undefined ? [] : [`report ${snapshot.report_path}`]),
    `trace  ${snapshot.trace_path}`,
  ];
  return {
    content: [{ type: 'text', text: lines.join('\n') }],
    structuredContent: { ...snapshot },
    ...(snapshot.status === 'failed' ? { isError: true } : {}),
  };
}

function unknownRun(board: JobBoard, runId: string): ToolAnswer {
  const known = board.runIds;
  return {
    content: [
      {
        type: 'text',
        text: `There is no run "${runId}" on this server. Known runs: ${known.join(', ') || '(none yet; start one with run_job)'}.`,
      },
    ],
    isError: true,
  };
}

/**
 * troupe as an MCP server: `run_job` hands a task to a coordinator and its
 * sub-agents (progress notifications from the event stream when the client
 * asks for them), `run_status` and `cancel_run` follow and stop runs by id,
 * `list_roles` says which roles there are. One McpServer per client
 * connection; the JobBoard (the runs) is shared.
 */
export function createTroupeMcpServer(board: JobBoard, roles: readonly AnyRole[]): McpServer {
  const server = new McpServer({ name: 'troupe', version: troupePackage().version });
  const roleNames = roles.map((role) => role.name);

  server.registerTool(
    'run_job',
    {
      title: 'Run a troupe job',
      description:
        'Hands a task to a coordinator that splits it among sub-agents working in parallel (research, analysis, report), and returns the answer, the run id, and the paths of the report and the trace. Sends progress notifications while it runs when the request has a progress token. With wait: false it returns the run id at once; follow it with run_status and stop it with cancel_run.',
      inputSchema: {
        task: z.string().min(1).describe('What to do, in plain words.'),
        roles: z
          .array(z.string())
          .optional()
          .describe(
            `Roles the coordinator may delegate to (default all: ${roleNames.join(', ')}).`,
          ),
        budget_tokens: z
          .number()
          .int()
          .positive()
          .optional()
          .describe('Token budget of the whole run.'),
        wait: z
          .boolean()
          .optional()
          .describe('Wait for the answer (default true); false returns the run id at once.'),
      },
    },
    async (args, extra) => {
      const unknown = (args.roles ?? []).filter((role) => !roleNames.includes(role));
      if (unknown.length > 0) {
        return {
          content: [
            {
              type: 'text',
              text: `Unknown role${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}. Roles: ${roleNames.join(', ')}.`,
            },
          ],
          isError: true,
        };
      }
      const token = extra._meta?.progressToken;
      let progress = 0;
      const onProgress =
        token === undefined
          ? undefined
          : (message: string): void => {
              progress += 1;
              extra
                .sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken: token, progress, message },
                })
                .catch(() => undefined);
            };
      const { runId, done } = await board.start(
        { task: args.task, roles: args.roles, budgetTokens: args.budget_tokens },
        onProgress,
      );
      const snapshotNow = board.status(runId) as JobSnapshot;
      if (args.wait === false) return answer(snapshotNow);
      // The client gave up on the request: nobody waits for the answer, so stop the run.
      const onAbort = (): void => {
        board.cancel(runId, 'the MCP request was cancelled');
      };
      extra.signal.addEventListener('abort', onAbort, { once: true });
      try {
        await done;
      } finally {
        extra.signal.removeEventListener('abort', onAbort);
      }
      return answer(board.status(runId) as JobSnapshot);
    },
  );

  server.registerTool(
    'run_status',
    {
      title: 'Status of a troupe run',
      description:
        'The state of a run started by run_job: running or how it ended, sub-agents started and finished, the latest progress line, and the answer once there is one.',
      inputSchema: { run_id: z.string().describe('The run id run_job returned.') },
    },
    async ({ run_id }) => {
      const snapshot = board.status(run_id);
      return snapshot === undefined ? unknownRun(board, run_id) : answer(snapshot);
    },
  );

  server.registerTool(
    'cancel_run',
    {
      title: 'Cancel a troupe run',
      description:
        'Stops a running run: every sub-agent is cancelled, the trace is kept. Returns the run’s final state.',
      inputSchema: { run_id: z.string().describe('The run id run_job returned.') },
    },
    async ({ run_id }) => {
      if (board.status(run_id) === undefined) return unknownRun(board, run_id);
      board.cancel(run_id);
      await board.settled(run_id);
      return answer(board.status(run_id) as JobSnapshot);
    },
  );

  server.registerTool(
    'list_roles',
    {
      title: 'List troupe roles',
      description: 'The roles sub-agents can take, each with what it is good for and its tools.',
      inputSchema: {},
    },
    async () => ({
      content: [
        {
          type: 'text',
          text: roles
            .map(
              (role) =>
                `${role.name}: ${role.description} (tools: ${[...role.tools, ...(role.mcp ?? []).map((access) => `${access.server}__*`)].join(', ') || 'none'})`,
            )
            .join('\n'),
        },
      ],
    }),
  );
  return server;
}
