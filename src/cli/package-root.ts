import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: { root: string; version: string } | undefined;

/**
 * The troupe package folder, found by walking up from this module to the
 * package.json named "troupe" (the module runs from src/ under vitest and
 * from dist/src/ when built, so a fixed relative path would be wrong in one).
 */
export function packageRoot(): { root: string; version: string } {
  if (cached !== undefined) return cached;
  let folder = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(folder, 'package.json');
    if (existsSync(manifest)) {
      try {
        const data = JSON.parse(readFileSync(manifest, 'utf8')) as {
          name?: string;
          version?: string;
        };
        if (data.name === 'troupe') {
          cached = { root: folder, version: data.version ?? '0.0.0' };
          return cached;
        }
      } catch {
        // Not ours; keep walking.
      }
    }
    const parent = dirname(folder);
    if (parent === folder) {
      cached = { root: process.cwd(), version: '0.0.0' };
      return cached;
    }
    folder = parent;
  }
}

/** The bundled example corpus (examples/corpus) the demo researches. */
export function corpusDir(): string {
  return join(packageRoot().root, 'examples', 'corpus');
}
