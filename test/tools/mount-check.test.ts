import { describe, expect, it } from 'vitest';
import { parseMountInfo, protectedMountProblems } from '../../src/tools/mount-check.js';

// A sandbox's mountinfo as bubblewrap leaves it: the workspace read-only, then writable on
// top, then the protected entries read-only over themselves (paths as in proc(5)).
const line = (id: number, device: string, root: string, point: string, options: string) =>
  `${id} ${id - 1} ${device} ${root} ${point} ${options},nosuid,nodev - ext4 /dev/vda rw`;
const WS = '/work/my\\040ws';
const base = [
  line(80, '254:0', '/work/my\\040ws', WS, 'ro'),
  line(81, '254:0', '/work/my\\040ws', WS, 'rw'),
];
const roots = ['/work/my ws'];
const nested = '/work/my ws/sub/.git';

describe('protectedMountProblems', () => {
  it('accepts a read-only mount of the entry over itself, spaces decoded', () => {
    const mounts = parseMountInfo(
      [...base, line(82, '254:0', '/work/my\\040ws/sub/.git', `${WS}/sub/.git`, 'ro')].join('\n'),
    );
    expect(mounts[2]?.mountPoint).toBe(nested);
    expect(protectedMountProblems(mounts, roots, [nested])).toEqual([]);
  });

  it('accepts a workspace on a filesystem mounted elsewhere (roots relative to that filesystem)', () => {
    const mounts = parseMountInfo(
      [
        line(80, '8:1', '/ws', '/work/my\\040ws', 'rw'),
        line(81, '8:1', '/ws/sub/.git', `${WS}/sub/.git`, 'ro'),
      ].join('\n'),
    );
    expect(protectedMountProblems(mounts, roots, [nested])).toEqual([]);
  });

  it('refuses a mount that shows another folder than the one it covers (a swap during setup)', () => {
    const mounts = parseMountInfo(
      [...base, line(82, '254:0', '/work/my\\040ws/aside/.git', `${WS}/sub/.git`, 'ro')].join('\n'),
    );
    expect(protectedMountProblems(mounts, roots, [nested])).toEqual([
      `the mount at ${nested} shows /work/my ws/aside/.git, not /work/my ws/sub/.git`,
    ]);
  });

  it('refuses a missing, writable, foreign or covered mount', () => {
    expect(protectedMountProblems(parseMountInfo(base.join('\n')), roots, [nested])).toEqual([
      `${nested} is not mounted read-only`,
    ]);
    const writable = [
      ...base,
      line(82, '254:0', '/work/my\\040ws/sub/.git', `${WS}/sub/.git`, 'rw'),
    ];
    expect(protectedMountProblems(parseMountInfo(writable.join('\n')), roots, [nested])).toEqual([
      `the mount at ${nested} is not read-only`,
    ]);
    const foreign = [...base, line(82, '8:1', '/work/my\\040ws/sub/.git', `${WS}/sub/.git`, 'ro')];
    expect(
      protectedMountProblems(parseMountInfo(foreign.join('\n')), roots, [nested]),
    ).toHaveLength(1);
    const covered = [
      ...base,
      line(82, '254:0', '/work/my\\040ws/sub/.git', `${WS}/sub/.git`, 'ro'),
      line(83, '254:0', '/work/my\\040ws/sub', `${WS}/sub`, 'rw'),
    ];
    expect(protectedMountProblems(parseMountInfo(covered.join('\n')), roots, [nested])).toEqual([
      `${nested} is covered by a later mount`,
    ]);
  });
});
