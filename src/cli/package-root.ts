import { join } from 'node:path';
import { troupePackage } from '../util/package-files.js';

/** The troupe package folder and version (see util/package-files.ts). */
export function packageRoot(): { root: string; version: string } {
  return troupePackage();
}

/** The bundled example corpus (examples/corpus) the demo researches. */
export function corpusDir(): string {
  return join(packageRoot().root, 'examples', 'corpus');
}
