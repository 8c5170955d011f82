import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../src/errors.js';
import { shellTool } from '../../src/tools/builtin/shell.js';
import {
  assertRoleGranted,
  DEFAULT_GRANTS,
  parseTiers,
  resolveGrants,
} from '../../src/tools/permissions.js';

function thrown(run: () => void): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('parseTiers', () => {
  it('parses a comma list in canonical order, trimmed, case-insensitive, without duplicates', () => {
    expect(parseTiers('network, READ,read')).toEqual(['read', 'network']);
    expect(parseTiers('')).toEqual([]);
    expect(parseTiers('all')).toEqual(['read', 'write', 'exec', 'network']);
  });

  it('throws usage.invalid_option naming the known tiers and the closest one', () => {
    const error = thrown(() => parseTiers('read,exce'));
    expect(isTroupeError(error, 'usage.invalid_option')).toBe(true);
    expect((error as Error).message).toBe(
      'Unknown permission tier "exce" in --allow. Known tiers: read, write, exec, network (or all); did you mean "exec"?',
    );
  });
});

describe('DEFAULT_GRANTS', () => {
  it('grants read, write (confined to the output folder by the runtime) and network, never exec', () => {
    expect(DEFAULT_GRANTS).toEqual(['read', 'write', 'network']);
    expect(DEFAULT_GRANTS).not.toContain('exec');
  });
});

describe('assertRoleGranted', () => {
  it('passes when every tool is covered', () => {
    expect(() =>
      assertRoleGranted('researcher', ['read_file', 'fetch_url'], DEFAULT_GRANTS),
    ).not.toThrow();
  });

  it('names the role, the tier, the tools and the --allow value when a tier is missing', () => {
    const error = thrown(() =>
      assertRoleGranted('analyst', ['read_file', 'shell', 'python'], DEFAULT_GRANTS),
    );
    expect(isTroupeError(error, 'permission.denied')).toBe(true);
    expect((error as Error).message).toBe(
      'Role "analyst" needs the exec (for shell, python) permission, which this run does not grant. Rerun with --allow read,write,exec,network, or remove those tools from the role.',
    );
  });

  it('accepts tool objects and lists several missing tiers', () => {
    const error = thrown(() => assertRoleGranted('r', [shellTool, 'write_file'], ['read']));
    expect((error as Error).message).toContain(
      'needs the exec (for shell) and write (for write_file) permissions',
    );
    expect((error as Error).message).toContain('--allow read,write,exec');
  });

  it('refuses to guess the tiers of an unknown tool name', () => {
    expect(
      isTroupeError(
        thrown(() => assertRoleGranted('r', ['web_serch'], ['read'])),
        'usage.unknown_tool',
      ),
    ).toBe(true);
  });
});

describe('resolveGrants', () => {
  it('uses the defaults with writes confined to the output folder when --allow is absent', () => {
    expect(resolveGrants(undefined)).toEqual({
      grants: ['read', 'write', 'network'],
      confineWritesToOutput: true,
    });
  });

  it('grants exactly what --allow says, confining writes unless write is granted', () => {
    expect(resolveGrants('read,exec')).toEqual({
      grants: ['read', 'exec'],
      confineWritesToOutput: true,
    });
    expect(resolveGrants('read,write')).toEqual({
      grants: ['read', 'write'],
      confineWritesToOutput: false,
    });
  });
});
