import { describe, expect, it } from 'vitest';
import { scrubEnv } from '../../src/tools/scrub-env.js';

describe('scrubEnv', () => {
  it('keeps allowlisted variables and drops everything else', () => {
    const env = scrubEnv({
      PATH: '/usr/bin',
      HOME: '/home/me',
      LC_ALL: 'C.UTF-8',
      DATABASE_URL: 'postgres://user:password@db/x',
      OPENAI_API_KEY: 'sk-test-123456789',
      RANDOM_THING: 'x',
    });
    expect(env).toEqual({ PATH: '/usr/bin', HOME: '/home/me', LC_ALL: 'C.UTF-8' });
  });

  it('passes extra names through, but never a secret-looking one', () => {
    const env = scrubEnv(
      { PROJECT: 'troupe', GITHUB_TOKEN: 'ghp_123456789', MY_SECRET: 'x' },
      { passEnv: ['PROJECT', 'GITHUB_TOKEN', 'MY_SECRET'] },
    );
    expect(env).toEqual({ PROJECT: 'troupe' });
  });

  it('sets variables after scrubbing, except secret-looking ones', () => {
    const env = scrubEnv({ PATH: '/bin' }, { set: { TMPDIR: '/tmp', AWS_SECRET_ACCESS_KEY: 'x' } });
    expect(env).toEqual({ PATH: '/bin', TMPDIR: '/tmp' });
  });
});
