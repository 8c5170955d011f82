import { z } from 'zod';
import { TroupeError } from '../errors.js';
import { toolJsonSchema } from '../tools/tool.js';

/** Channel names: they become part of a tool name (`publish_<channel>`), so the same rule applies. */
export const CHANNEL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,56}$/;

/**
 * A typed publish/subscribe channel between actors. The zod schema stays in
 * the main thread, where the router validates every payload before delivery;
 * workers only see its JSON Schema (`ChannelSpec`).
 */
export interface Channel<TPayload = unknown> {
  readonly name: string;
  readonly schema: z.ZodType<TPayload>;
  /** The JSON Schema of the payload (type object), as a publishing model sees it. */
  readonly jsonSchema: Record<string, unknown>;
  /** One line for the model: what goes on this channel. */
  readonly description: string;
}

/** Any channel, whatever its payload type. */
// biome-ignore lint/suspicious/noExplicitAny: a role lists channels of every payload type.
export type AnyChannel = Channel<any>;

/** What a worker knows about a channel: plain data, crossing threads. */
export const ChannelSpecSchema = z.object({
  name: z.string(),
  description: z.string(),
  jsonSchema: z.record(z.string(), z.unknown()),
});
export type ChannelSpec = z.infer<typeof ChannelSpecSchema>;

/**
 * Declares a channel. The payload schema must be a zod object, because a
 * publisher's `publish_<name>` tool takes the payload as its parameters.
 *
 * @example
 * const findings = defineChannel('findings', z.object({ title: z.string(), summary: z.string() }));
 */
export function defineChannel<TSchema extends z.ZodObject>(
  name: string,
  schema: TSchema,
  options: { description?: string } = {},
): Channel<z.output<TSchema>> {
  if (!CHANNEL_NAME_PATTERN.test(name)) {
    throw new TroupeError(
      'usage.invalid_option',
      `Invalid channel name "${name}": names must match ${CHANNEL_NAME_PATTERN} (letters, digits, _ and -, at most 56).`,
    );
  }
  if (!(schema instanceof z.ZodObject)) {
    throw new TroupeError(
      'usage.invalid_option',
      `Channel "${name}": the payload schema must be a zod object (z.object({...})).`,
    );
  }
  return Object.freeze({
    name,
    schema: schema as unknown as z.ZodType<z.output<TSchema>>,
    jsonSchema: toolJsonSchema(schema),
    description: options.description ?? `Messages on the "${name}" channel.`,
  });
}

/** The plain-data view of a channel, for a worker. */
export function toChannelSpec(channel: AnyChannel): ChannelSpec {
  return { name: channel.name, description: channel.description, jsonSchema: channel.jsonSchema };
}

/**
 * The user message a subscriber receives for one channel message. The
 * offline model parses this exact shape: change it only together with it.
 */
export function formatChannelMessage(channel: string, from: string, payload: unknown): string {
  return `[message on channel "${channel}" from ${from}]\n${JSON.stringify(payload)}`;
}

/** The one user message a subscriber receives when no publisher of `channel` is left. */
export function formatChannelClosed(channel: string): string {
  return `[channel "${channel}" closed: no more messages will arrive]`;
}

/** The name of the tool that publishes on `channel`. */
export function publishToolName(channel: string): string {
  return `publish_${channel}`;
}

/** Validates a payload against a channel's schema: the parsed payload, or a message saying what is wrong. */
export function validatePayload(
  channel: AnyChannel,
  payload: unknown,
): { ok: true; payload: unknown } | { ok: false; message: string } {
  const parsed = channel.schema.safeParse(payload);
  if (parsed.success) return { ok: true, payload: parsed.data };
  return {
    ok: false,
    message: `The payload does not fit the "${channel.name}" channel's schema:\n${z.prettifyError(parsed.error)}`,
  };
}
