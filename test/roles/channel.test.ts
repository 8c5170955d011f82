import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isTroupeError } from '../../src/errors.js';
import {
  defineChannel,
  formatChannelClosed,
  formatChannelMessage,
  publishToolName,
  toChannelSpec,
  validatePayload,
} from '../../src/roles/channel.js';

describe('defineChannel', () => {
  it('keeps the zod schema and exposes its JSON Schema when the payload is an object', () => {
    const channel = defineChannel('notes', z.object({ text: z.string() }));
    expect(channel.name).toBe('notes');
    expect(channel.jsonSchema).toMatchObject({ type: 'object', required: ['text'] });
    expect(toChannelSpec(channel)).toMatchObject({ name: 'notes', jsonSchema: channel.jsonSchema });
  });

  it('throws usage.invalid_option when the name cannot be part of a tool name', () => {
    let error: unknown;
    try {
      defineChannel('bad name', z.object({}));
    } catch (caught) {
      error = caught;
    }
    expect(isTroupeError(error, 'usage.invalid_option')).toBe(true);
  });
});

describe('channel messages', () => {
  it('formats a received message exactly as the offline model parses it', () => {
    expect(formatChannelMessage('findings', 'researcher-1', { title: 'T' })).toBe(
      '[message on channel "findings" from researcher-1]\n{"title":"T"}',
    );
  });

  it('formats the close notice exactly', () => {
    expect(formatChannelClosed('findings')).toBe(
      '[channel "findings" closed: no more messages will arrive]',
    );
  });

  it('names the publish tool after the channel', () => {
    expect(publishToolName('findings')).toBe('publish_findings');
  });

  it('refuses a payload that does not fit the schema with the validation message', () => {
    const channel = defineChannel('notes', z.object({ text: z.string() }));
    const result = validatePayload(channel, { text: 3 });
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.message).toContain('text');
    expect(validatePayload(channel, { text: 'a' })).toEqual({ ok: true, payload: { text: 'a' } });
  });
});
