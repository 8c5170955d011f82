#!/usr/bin/env node
// Writes dist/src/cli/help-snapshot.json, the help texts `troupe --help`,
// `troupe <command> --help` and `--version` print without loading commander
// (src/cli/help-snapshot.ts). `npm run build` runs it after tsc; it reads
// the texts from the built program itself.
import { writeFileSync } from 'node:fs';

const { captureHelpSnapshot } = await import('../dist/src/cli/help-capture.js');
const { HELP_SNAPSHOT_URL } = await import('../dist/src/cli/help-snapshot.js');
writeFileSync(HELP_SNAPSHOT_URL, `${JSON.stringify(await captureHelpSnapshot())}\n`);
