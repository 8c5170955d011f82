import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createPythonTool, pythonTool } from '../../../src/tools/builtin/python.js';
import { resolveProgram } from '../../../src/tools/builtin/run-process.js';
import {
  callTool,
  contextFor,
  createWorld,
  outcome,
  sandboxed,
  sandboxStatus,
  snapshot,
  type World,
} from '../harness.js';

const hasPython = resolveProgram('python3', process.env, '/nonexistent') !== undefined;
const skip = !sandboxStatus.available || !hasPython;
const SECRET = 'sk-troupe-test-marker-python-0123456789';

let world: World;
beforeEach(async () => {
  world = await createWorld();
});
afterEach(() => world.cleanup());

describe('python', () => {
  it.skipIf(skip)(
    sandboxed('runs a snippet in the workspace and returns what it printed'),
    async () => {
      const code = "import os\nprint(6 * 7)\nopen('out.txt', 'w').write('hi')\nprint(os.getcwd())";
      const result = await callTool(pythonTool, { code }, contextFor(world.workspace));
      expect(result).toEqual({ ok: true, content: `stdout:\n42\n${world.workspace}` });
      expect(await readFile(path.join(world.workspace, 'out.txt'), 'utf8')).toBe('hi');
    },
  );

  it.skipIf(skip)(sandboxed('reports an exception as a failure with the traceback'), async () => {
    const result = await callTool(
      pythonTool,
      { code: 'print("before")\n1 / 0' },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('tool.failed');
    expect(result.content).toContain('python exited with code 1');
    expect(result.content).toContain('before');
    expect(result.content).toContain('ZeroDivisionError');
  });

  it.skipIf(skip)(sandboxed('kills a snippet that runs past its timeout'), async () => {
    const result = await callTool(
      pythonTool,
      { code: 'while True: pass', timeoutMs: 300 },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('tool.timeout');
  });

  it.skipIf(skip)(sandboxed('cannot write outside the workspace'), async () => {
    const before = await snapshot(world.outside);
    const code = `for target in [${JSON.stringify(path.join(world.outside, 'x.txt'))}, '/usr/troupe-x.txt']:\n    try:\n        open(target, 'w').write('x'); print('WROTE', target)\n    except OSError as error:\n        print('refused', error.errno)`;
    const result = await callTool(pythonTool, { code }, contextFor(world.workspace));
    expect(result.content).not.toContain('WROTE');
    expect(await snapshot(world.outside)).toEqual(before);
  });

  it.skipIf(skip)(
    sandboxed('sees neither the secrets in the environment nor those of PID 1'),
    async () => {
      const code =
        "import os\nprint(dict(os.environ))\nprint(open('/proc/1/environ').read())\nprint(open('/proc/%d/environ' % os.getppid()).read())";
      const env = { ...process.env, ANTHROPIC_API_KEY: SECRET };
      const result = await callTool(pythonTool, { code }, contextFor(world.workspace, { env }));
      expect(result.ok).toBe(true);
      expect(result.content).not.toContain(SECRET);
    },
  );

  it.skipIf(!hasPython)('asks for approval and does not run on a no', async () => {
    const approve = vi.fn(async () => false);
    const code = "open('ran.txt', 'w').write('x')";
    const context = contextFor(world.workspace, { approve, unsafeNoSandbox: true });
    const result = await callTool(pythonTool, { code }, context);
    expect(approve).toHaveBeenCalledWith({
      tool: 'python',
      agentId: 'agent-test',
      summary: 'run a 1-line Python snippet in the workspace',
      detail: code,
    });
    expect(outcome(result)).toBe('tool.refused');
    expect(await readdir(world.workspace)).toEqual([]);
  });

  it('says clearly when python3 is missing', async () => {
    const tool = createPythonTool({ interpreter: 'troupe-no-such-python3' });
    const result = await callTool(tool, { code: 'print(1)' }, contextFor(world.workspace));
    expect(outcome(result)).toBe('tool.failed');
    expect(result.content).toContain('troupe-no-such-python3 is not installed on this machine');
    expect(result.content).toContain('apt-get install python3');
  });

  it('is refused without the exec tier', async () => {
    const result = await callTool(
      pythonTool,
      { code: 'print(1)' },
      contextFor(world.workspace, { grants: ['read', 'write', 'network'] }),
    );
    expect(outcome(result)).toBe('permission.denied');
  });
});
