import { describe, expect, it } from 'vitest';
import { AgentEventSchema } from '../../src/events/schema.js';
import { JsonRenderer } from '../../src/render/json.js';
import { sampleRun } from '../cli/events.js';
import { FakeTerminal } from './fake-terminal.js';

describe('JsonRenderer', () => {
  it('writes one schema-valid JSON event per line and nothing else', () => {
    const output = new FakeTerminal();
    const renderer = new JsonRenderer({ output, env: {} });
    const events = sampleRun();
    for (const event of events) renderer.handle(event);
    renderer.finish();
    const lines = output.text.trimEnd().split('\n');
    expect(lines).toHaveLength(events.length);
    for (const line of lines)
      expect(AgentEventSchema.safeParse(JSON.parse(line)).success).toBe(true);
  });

  it('redacts secrets when an event carries one', () => {
    const output = new FakeTerminal();
    const secret = 'very-secret-token-value';
    const renderer = new JsonRenderer({ output, env: { GITHUB_TOKEN: secret } });
    const [first] = sampleRun();
    renderer.handle({ ...first!, type: 'agent.progress', note: secret } as any);
    expect(output.text).not.toContain(secret);
  });
});
