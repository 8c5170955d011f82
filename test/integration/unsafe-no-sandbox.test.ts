import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelSpec } from '../../src/model/model.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { closeRuntimes, makeRuntime, ofType } from './helpers.js';

const CONTEXT_TOOLS = fileURLToPath(new URL('../fixtures/tools/context.mjs', import.meta.url));

afterEach(async () => {
  await closeRuntimes();
});

const checker = defineRole({
  name: 'checker',
  description: 'c',
  system: 'c',
  tools: [userTool('sandbox_mode')],
});
const model: ModelSpec = {
  provider: 'scripted',
  script: { steps: [{ toolCalls: [{ name: 'sandbox_mode' }] }, { content: 'done' }] },
};

describe('Runtime unsafeNoSandbox', () => {
  it('reaches the tool context of actors in worker threads only when set', async () => {
    for (const unsafeNoSandbox of [true, false]) {
      const { runtime, events } = makeRuntime({
        roles: [checker],
        model,
        toolModules: [CONTEXT_TOOLS],
        unsafeNoSandbox,
      });
      const result = await runtime.spawn('checker', 'check').result;
      expect(result.status).toBe('completed');
      expect(ofType(events, 'tool.result')[0]?.content).toBe(`unsafeNoSandbox=${unsafeNoSandbox}`);
      await runtime.close();
    }
  });
});
