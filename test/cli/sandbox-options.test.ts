import { describe, expect, it } from 'vitest';
import {
  parseAllowDomain,
  parseExecLimit,
  sandboxPolicyOf,
} from '../../src/cli/commands/options.js';

describe('--exec-limit', () => {
  it('reads bytes with units, seconds and counts, and collects repeats', () => {
    let limits = parseExecLimit('memory=1g', undefined);
    limits = parseExecLimit('cpu=2m', limits);
    limits = parseExecLimit('processes=64', limits);
    limits = parseExecLimit('file-size=512k', limits);
    limits = parseExecLimit('output=10KiB', limits);
    expect(limits).toEqual({
      memoryBytes: 1024 ** 3,
      cpuSeconds: 120,
      processes: 64,
      fileSizeBytes: 512 * 1024,
      outputBytes: 10 * 1024,
    });
  });

  it('refuses unknown names and malformed values with the accepted forms', () => {
    expect(() => parseExecLimit('ram=1g', undefined)).toThrow(/memory, processes/);
    expect(() => parseExecLimit('processes=1.5', undefined)).toThrow(/whole number/);
    expect(() => parseExecLimit('cpu=3h', undefined)).toThrow(/seconds/);
  });
});

describe('--allow-domain and the policy', () => {
  it('collects host patterns and refuses URLs', () => {
    expect(parseAllowDomain('*.Example.com', ['a.org'])).toEqual(['a.org', '*.example.com']);
    expect(() => parseAllowDomain('https://x.org/', undefined)).toThrow(/host name pattern/);
  });

  it('is undefined when no flag is set', () => {
    expect(sandboxPolicyOf({})).toBeUndefined();
    expect(sandboxPolicyOf({ allowProtectedWrites: true, allowDomain: ['a.org'] })).toEqual({
      allowProtectedWrites: true,
      allowDomains: ['a.org'],
    });
  });
});
