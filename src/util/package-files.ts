import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

let cached: { root: string; version: string } | undefined;

/**
 * The troupe package folder and version, found by walking up from this
 * module to the package.json named "troupe". The module runs from src/
 * under vitest, from dist/src/ as a library, and folded into dist/bundle/
 * (scripts/bundle.mjs) in the binary and the worker threads: a path relative
 * to the module would be right in only one of them.
 */
export function troupePackage(): { root: string; version: string } {
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

/** A file of the troupe package by its path from the package folder (`dist/workers/…`). */
export function troupeFileUrl(path: string): URL {
  return pathToFileURL(join(troupePackage().root, path));
}
