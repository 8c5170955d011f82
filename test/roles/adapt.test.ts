import { describe, expect, it } from 'vitest';
import { adaptRole } from '../../src/roles/adapt.js';
import { researcher } from '../../src/roles/builtin.js';
import { defineRole } from '../../src/roles/role.js';

describe('adaptRole', () => {
  it('drops the built-in tools whose tier is not granted, and says so in the prompt', () => {
    const { role, adaptation } = adaptRole(researcher, ['read']);
    expect(adaptation).toEqual({ role: 'researcher', dropped: ['fetch_url'], tiers: ['network'] });
    expect(role.tools).not.toContain('fetch_url');
    expect(role.tools).toContain('read_file');
    expect(role.system).toContain('Not available in this run: fetch_url');
    expect(role.description).toContain('without fetch_url');
  });

  it('leaves a role whose tools are all granted as it is', () => {
    const { role, adaptation } = adaptRole(researcher, ['read', 'network']);
    expect(adaptation).toBeUndefined();
    expect(role).toBe(researcher);
  });

  it('does not adapt a role that requires the tool (its spawn then fails with the --allow fix)', () => {
    const fetcher = defineRole({
      name: 'fetcher',
      description: 'Fetches.',
      system: 'Fetch.',
      tools: ['fetch_url', 'read_file'],
      requiredTools: ['fetch_url'],
    });
    const { role, adaptation } = adaptRole(fetcher, ['read']);
    expect(adaptation).toBeUndefined();
    expect(role.tools).toContain('fetch_url');
  });

  it('refuses requiredTools that are not among the tools', () => {
    expect(() =>
      defineRole({
        name: 'fetcher',
        description: 'Fetches.',
        system: 'Fetch.',
        tools: ['read_file'],
        requiredTools: ['fetch_url'],
      }),
    ).toThrow(/requiredTools names "fetch_url", which is not in its tools/);
  });
});
