import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const script = join(root, 'scripts/check-layers.mjs');

describe('scripts/check-layers.mjs', () => {
  let copy: string | undefined;
  afterEach(() => {
    if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
    copy = undefined;
  });

  function planted(file: string, text: string): ReturnType<typeof spawnSync> {
    copy = mkdtempSync(join(tmpdir(), 'troupe-layers-'));
    cpSync(join(root, 'src'), join(copy, 'src'), { recursive: true });
    cpSync(join(root, 'workers'), join(copy, 'workers'), { recursive: true });
    writeFileSync(join(copy, file), text);
    return spawnSync(process.execPath, [script, '--root', copy], { encoding: 'utf8' });
  }

  it('passes on the tree as it is', () => {
    expect(execFileSync(process.execPath, [script], { encoding: 'utf8' })).toMatch(/no cycle/);
  });

  it('fails when a lower layer imports a higher one, type-only imports included', () => {
    const run = planted(
      'src/roles/planted.ts',
      "import type { Runtime } from '../runtime/runtime.js';\nexport type R = Runtime;\n",
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/src\/roles\/planted\.ts imports src\/runtime\/runtime\.ts/);
  });

  it('fails when the thread side imports main-side runtime code', () => {
    const run = planted(
      'src/runtime/host/planted.ts',
      "import { Router } from '../messaging/router.js';\nexport const r = Router;\n",
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/src\/runtime\/host may import only/);
  });

  it('fails on a cycle between two corridors of the runtime', () => {
    const run = planted(
      'src/runtime/wire/planted.ts',
      "import type { BudgetGuard } from '../budget/budget-guard.js';\nexport type B = BudgetGuard;\n",
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/src\/runtime\/wire may import only/);
  });
});
