import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The package as a user gets it: `npm pack`, installed into an empty project,
// then `troupe demo` and the package's entries used from there. The install is
// offline: a lockfile for the empty project is written from troupe's own (the
// same versions `npm ci` put in the npm cache), so the test reaches no registry.

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const canPack = spawnSync(npm, ['--version'], { encoding: 'utf8' }).status === 0;

interface PackResult {
  filename: string;
  integrity: string;
  files: { path: string }[];
}

interface LockEntry {
  dev?: boolean;
  devOptional?: boolean;
  peer?: boolean;
  [key: string]: unknown;
}

const work = mkdtempSync(join(tmpdir(), 'troupe-pack-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.skipIf(!canPack)('the packed package', { timeout: 180_000 }, () => {
  let packed: PackResult;

  it('ships the built library, the workers and the demo corpus, and no bench, examples or source maps', () => {
    // --ignore-scripts: dist/ is already built (npm test builds first), and a
    // rebuild here would empty dist/ under the tests running beside this one.
    const out = execFileSync(
      npm,
      ['pack', '--ignore-scripts', '--json', '--pack-destination', work],
      {
        cwd: root,
        encoding: 'utf8',
      },
    );
    const [first] = JSON.parse(out) as PackResult[];
    if (first === undefined) throw new Error(`npm pack printed no package: ${out}`);
    packed = first;
    const paths = packed.files.map((file) => file.path);
    expect(paths).toContain('bin/troupe.js');
    expect(paths).toContain('dist/src/index.js');
    expect(paths).toContain('dist/src/entries/tools.js');
    // What `troupe --help` prints without loading commander (npm run build writes it).
    expect(paths).toContain('dist/src/cli/help-snapshot.json');
    expect(paths.some((path) => path.startsWith('dist/workers/'))).toBe(true);
    expect(paths.filter((path) => path.startsWith('examples/corpus/')).length).toBeGreaterThan(0);
    expect(paths.filter((path) => path.startsWith('dist/bench/'))).toEqual([]);
    expect(paths.filter((path) => path.startsWith('dist/examples/'))).toEqual([]);
    expect(paths.filter((path) => path.endsWith('.map'))).toEqual([]);
    expect(paths.filter((path) => path.startsWith('src/') || path.startsWith('test/'))).toEqual([]);
  });

  it('installs into an empty project, where troupe demo runs and every entry imports', () => {
    const project = join(work, 'project');
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      version: string;
      dependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
      bin: Record<string, string>;
      engines: Record<string, string>;
      exports: Record<string, unknown>;
    };
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, LockEntry>;
    };
    const tarball = `file:../${packed.filename}`;
    const packages: Record<string, unknown> = {
      '': { name: 'empty-project', dependencies: { troupe: tarball } },
    };
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (!path.startsWith('node_modules/')) continue;
      // Production dependencies, and zod (a peer, which npm installs beside troupe).
      if (entry.dev === true && path !== 'node_modules/zod') continue;
      const { dev: _dev, devOptional: _devOptional, peer: _peer, ...rest } = entry;
      // This machine's npm omits registry URLs from lockfiles; without one npm
      // asks the registry where the tarball is, so name it (the cache has it).
      if (rest['resolved'] === undefined && typeof rest['version'] === 'string') {
        const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
        const base = name.slice(name.lastIndexOf('/') + 1);
        rest['resolved'] = `https://registry.npmjs.org/${name}/-/${base}-${rest['version']}.tgz`;
      }
      packages[path] = rest;
    }
    packages['node_modules/troupe'] = {
      version: pkg.version,
      resolved: tarball,
      integrity: packed.integrity,
      dependencies: pkg.dependencies,
      peerDependencies: pkg.peerDependencies,
      bin: pkg.bin,
      engines: pkg.engines,
    };
    mkdirSync(project, { recursive: true });
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({
        name: 'empty-project',
        private: true,
        type: 'module',
        dependencies: { troupe: tarball },
      }),
    );
    writeFileSync(
      join(project, 'package-lock.json'),
      JSON.stringify({ name: 'empty-project', lockfileVersion: 3, requires: true, packages }),
    );
    const install = spawnSync(npm, ['ci', '--offline', '--no-audit', '--no-fund'], {
      cwd: project,
      encoding: 'utf8',
    });
    expect(
      install.status,
      `npm ci --offline failed (is the npm cache filled by npm ci in the repo?):\n${install.stderr}`,
    ).toBe(0);

    const demo = spawnSync(
      process.execPath,
      [
        join(project, 'node_modules', '.bin', 'troupe'),
        'demo',
        '--fast',
        '--quiet',
        '--out',
        'runs',
      ],
      { cwd: project, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } },
    );
    expect(demo.status, demo.stderr).toBe(0);
    const help = spawnSync(
      process.execPath,
      [join(project, 'node_modules', '.bin', 'troupe'), 'run', '--help'],
      { cwd: project, encoding: 'utf8' },
    );
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('Usage: troupe run [options] [task]');
    const runs = readdirSync(join(project, 'runs'));
    expect(runs).toHaveLength(1);
    const report = join(project, 'runs', runs[0] ?? '', 'report.md');
    expect(existsSync(report)).toBe(true);
    expect(readFileSync(report, 'utf8').length).toBeGreaterThan(200);

    const entries = Object.keys(pkg.exports).filter((entry) => entry !== './package.json');
    const script = entries
      .map(
        (entry, index) =>
          `import * as e${index} from '${entry === '.' ? 'troupe' : `troupe/${entry.slice(2)}`}';`,
      )
      .join('\n');
    const counts = entries.map((_, index) => `Object.keys(e${index}).length`).join(', ');
    const imported = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', `${script}\nconsole.log(JSON.stringify([${counts}]));`],
      { cwd: project, encoding: 'utf8' },
    );
    expect(imported.status, imported.stderr).toBe(0);
    const sizes = JSON.parse(imported.stdout) as number[];
    expect(sizes).toHaveLength(entries.length);
    for (const size of sizes) expect(size).toBeGreaterThan(0);
  });
});
