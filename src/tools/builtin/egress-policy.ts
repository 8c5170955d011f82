import { errorMessage, TroupeError } from '../../errors.js';
import { lazyBuiltin } from '../../util/lazy-builtin.js';
import { canonicalAddress, forbiddenAddressReason, isIP } from './address-policy.js';

// Loaded on the first lookup: most threads never resolve a host (see lazy-builtin.ts).
const loadDns = lazyBuiltin<typeof import('node:dns/promises')>('node:dns/promises');

/**
 * One egress policy for everything that leaves the machine on a model's
 * behalf: fetch_url and the exec tools' proxy. A host must match the run's
 * domain allowlist (`--allow-domain`, when set), resolve here, and every
 * address it resolves to must be public (address-policy.ts); the caller
 * then connects to the vetted address, so DNS cannot change it afterwards.
 */

/** One address a host name resolved to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to its addresses (DNS by default; tests inject a map). */
export type HostResolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** What a host is checked against. */
export interface EgressPolicy {
  /** Host patterns (`example.com`, `*.example.com`); undefined allows any public host. */
  allowHosts?: readonly string[] | undefined;
  /** Name resolution (default: the system resolver). */
  resolve?: HostResolver | undefined;
  /** Canonical addresses exempted from the address policy. TEST-ONLY. */
  exempt?: ReadonlySet<string> | undefined;
}

/** The system resolver, through `dns.lookup` (hosts file and DNS, as the OS resolves). */
export const systemResolver: HostResolver = async (hostname) => {
  const found = await loadDns().lookup(hostname, { all: true, verbatim: true });
  return found.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));
};

/** True when `hostname` matches one of `patterns` (`*.example.com` matches sub-domains only). */
export function hostAllowed(hostname: string, patterns: readonly string[]): boolean {
  const host = hostname.toLowerCase();
  return patterns.some((pattern) =>
    pattern.startsWith('*.')
      ? host.endsWith(pattern.slice(1).toLowerCase())
      : host === pattern.toLowerCase(),
  );
}

/**
 * Checks `rawHost` (a name or an IP literal, brackets allowed) against the
 * policy and returns the address to connect to. Throws `tool.refused` with
 * the reason for a host off the allowlist or any non-public address, and
 * `tool.failed` when the name does not resolve. `what` names the request
 * in messages ("https://example.com/", "example.com:443").
 */
export async function vetHost(
  rawHost: string,
  policy: EgressPolicy,
  what: string,
  abort?: (promise: Promise<readonly ResolvedAddress[]>) => Promise<readonly ResolvedAddress[]>,
): Promise<ResolvedAddress> {
  const hostname = rawHost.replace(/^\[|\]$/g, '').toLowerCase();
  if (policy.allowHosts !== undefined && !hostAllowed(hostname, policy.allowHosts)) {
    throw new TroupeError(
      'tool.refused',
      `${hostname} is not on this run's host allowlist (${policy.allowHosts.join(', ')}, from --allow-domain), so ${what} was not reached.`,
      { details: { host: hostname, denied: 'allowlist' } },
    );
  }
  let addresses: readonly ResolvedAddress[];
  if (isIP(hostname) !== 0) {
    addresses = [{ address: hostname, family: isIP(hostname) === 6 ? 6 : 4 }];
  } else {
    const resolving = (policy.resolve ?? systemResolver)(hostname);
    try {
      addresses = await (abort === undefined ? resolving : abort(resolving));
    } catch (error) {
      if (error instanceof TroupeError || (error as Error).name === 'AbortError') throw error;
      throw new TroupeError(
        'tool.failed',
        `Could not resolve ${hostname}: ${errorMessage(error)}. Check the URL.`,
      );
    }
  }
  if (addresses.length === 0) throw new TroupeError('tool.failed', `${hostname} has no addresses.`);
  for (const { address } of addresses) {
    const reason = forbiddenAddressReason(address);
    if (reason !== undefined && policy.exempt?.has(canonicalAddress(address)) !== true) {
      const via = isIP(hostname) === 0 ? ` (${hostname} resolves to ${address})` : '';
      throw new TroupeError(
        'tool.refused',
        `${what} points at ${reason}${via}; only public internet addresses are reachable.`,
        { details: { host: hostname, denied: 'address' } },
      );
    }
  }
  // IPv4 first: hosts without an IPv6 route are common, and there is no silent fallback.
  return [...addresses].sort((a, b) => a.family - b.family)[0] as ResolvedAddress;
}
