import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('NATS loading', () => {
  it('loads the NATS client only by dynamic import, so local runs never load it', () => {
    const dist = new URL('../../../dist/src/', import.meta.url).pathname;
    const files = readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter((file) =>
      file.endsWith('.js'),
    );
    const read = (file: string): string => readFileSync(join(dist, file), 'utf8');
    const staticImports = files.filter((file) =>
      /^\s*import\s[^;]*['"]@nats-io\//m.test(read(file)),
    );
    const dynamicImports = files.filter((file) => /\bimport\(['"]@nats-io\//.test(read(file)));
    // Our own NATS modules are reached only through dynamic imports too.
    const staticOfOurs = files.filter((file) =>
      /^\s*import\s[^;]*['"][./]*(wire\/)?nats\/[a-z-]+\.js['"]/m.test(read(file)),
    );

    expect(files.length).toBeGreaterThan(50);
    expect(staticImports).toEqual([]);
    expect(dynamicImports).toEqual([join('runtime', 'wire', 'nats', 'nats-link.js')]);
    expect(staticOfOurs.every((file) => file.startsWith(join('runtime', 'wire', 'nats')))).toBe(
      true,
    );
  });
});
