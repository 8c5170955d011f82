#!/usr/bin/env node
import { fileURLToPath } from 'node:url';

// The binary runs the bundle `npm run build` writes (dist/bundle, see scripts/bundle.mjs).
let main;
try {
  ({ main } = await import('../dist/bundle/cli.js'));
} catch (error) {
  // A checkout installed without its build (`npm ci --ignore-scripts`, a failed tsc): say what to run.
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/bundle/')) {
    const root = fileURLToPath(new URL('..', import.meta.url));
    process.stderr.write(`troupe: this copy is not built; run \`npm run build\` in ${root}\n`);
    process.exit(2);
  }
  throw error;
}

process.exitCode = await main(process.argv);
