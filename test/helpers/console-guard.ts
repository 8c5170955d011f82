import { afterEach, beforeEach, vi } from 'vitest';

// Library code must never write to the real terminal: only src/cli does, and
// it is tested through a fake TerminalOutput. A test that writes fails here.
let writes: string[] = [];

beforeEach(() => {
  writes = [];
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      writes.push(`console.${method}: ${args.map(String).join(' ')}`);
    });
  }
});

afterEach(() => {
  vi.restoreAllMocks();
  if (writes.length > 0) {
    const seen = writes.join('\n');
    writes = [];
    throw new Error(`A test wrote to the console:\n${seen}`);
  }
});
