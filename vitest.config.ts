import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/helpers/console-guard.ts'],
    // Generous: CI shares this 2-core machine with other work, and a hang still fails.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
    // CI also writes a machine-readable report; .ci/run prints its counts as one plain line.
    reporters: process.env['CI'] ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results.json' },
  },
});
