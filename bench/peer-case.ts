import { floorFanout, measurePhases, type PeerWorkload } from './fanout-phases.js';

/**
 * One process of the peers' fan-out for the implementations that need no
 * peer package: `node --expose-gc dist/bench/peer-case.js --case <json>`
 * with `{ impl: 'floor' | 'troupe', n, latencyMs, turns, baseURL? }` (with a
 * baseURL, troupe's agents use the real `openai` provider against that
 * server); prints one JSON
 * line (a PhaseMeasurement). troupe is imported only for its own case, so the
 * floor's process holds nothing but the floor.
 */

type PeerCase = PeerWorkload & { impl: 'floor' | 'troupe' };

const index = process.argv.indexOf('--case');
const spec = JSON.parse(process.argv[index + 1] ?? '{}') as PeerCase;
const measured =
  spec.impl === 'floor'
    ? await measurePhases(spec.n, floorFanout(spec))
    : await (await import('./peer-troupe.js')).troupePhases(
        spec,
        spec.baseURL === undefined
          ? undefined
          : { provider: 'openai', model: 'bench', baseURL: spec.baseURL },
      );
console.log(JSON.stringify(measured));
