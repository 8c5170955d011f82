import { join } from 'node:path';
import { troupePackage } from '../util/package-files.js';

/** The bundled example corpus (examples/corpus) the demo researches. */
export function corpusDir(): string {
  return join(troupePackage().root, 'examples', 'corpus');
}
