import { describe, expect, it } from 'vitest';
import { Runtime } from '../../src/runtime/runtime.js';
import type { Transport, TransportHandlers } from '../../src/runtime/wire/transport.js';

// A transport that only records what the runtime asks of it.
function recordingTransport(): Transport & { starts: number } {
  const transport = {
    starts: 0,
    start(_handlers: TransportHandlers): void {
      transport.starts += 1;
    },
    hosts: () => [],
    send(): void {},
    terminate(): void {},
    close: async (): Promise<void> => {},
  };
  return transport;
}

const base = {
  model: { provider: 'scripted' as const, script: { steps: [{ content: 'done' }] } },
  workspace: '/tmp',
  grants: ['read' as const],
};

describe('Runtime.prestart', () => {
  it('starts the transport before any spawn, once', async () => {
    const transport = recordingTransport();
    const runtime = new Runtime({ ...base, transport });
    expect(transport.starts).toBe(0);
    runtime.prestart();
    runtime.prestart();
    expect(transport.starts).toBe(1);
    await runtime.close();
  });

  it('starts nothing after close', async () => {
    const transport = recordingTransport();
    const runtime = new Runtime({ ...base, transport });
    await runtime.close();
    runtime.prestart();
    expect(transport.starts).toBe(0);
  });
});
