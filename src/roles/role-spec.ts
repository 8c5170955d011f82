import { z } from 'zod';
import { CompressionSettingSchema } from '../agent/history.js';
import { McpRoleAccessSchema } from '../mcp/config.js';
import { ChannelSpecSchema } from './channel.js';

/**
 * The plain-data side of a role: what crosses to a worker thread (or a
 * remote node) and the mailbox bounds a role declares. Functions and zod
 * schemas stay in the main thread; workers see only this.
 */

/** What a full mailbox does to a sender: make it wait for room, or refuse at once. */
export type OverflowPolicy = 'block' | 'error';

/** Options for a Mailbox. */
export interface MailboxOptions {
  /** Messages delivered but not yet read by the actor (default 64). */
  capacity?: number;
  /** What a sender meets when the mailbox is full (default 'block'). */
  overflow?: OverflowPolicy;
  /** Senders allowed to wait at once under 'block' before more are refused (default 1,024). */
  maxWaiting?: number;
}

/** A role as a worker sees it: plain data, tools by name. */
export const RoleSpecSchema = z.object({
  name: z.string(),
  system: z.string(),
  tools: z.array(z.string()),
  maxSteps: z.number().int().positive(),
  publishes: z.array(ChannelSpecSchema),
  subscribes: z.array(z.string()),
  canDelegate: z.boolean(),
  budget: z
    .object({
      softTokens: z.number().positive().optional(),
      hardTokens: z.number().positive().optional(),
    })
    .optional(),
  stream: z.boolean().optional(),
  /** History compression, the role's over the run's; absent: on when the model's window is known. */
  compression: CompressionSettingSchema.optional(),
  /** The MCP servers (and optionally tools) the role may use. */
  mcp: z.array(McpRoleAccessSchema).optional(),
});
export type RoleSpec = z.infer<typeof RoleSpecSchema>;
