import { lazyBuiltin } from '../../util/lazy-builtin.js';

// Loaded on the first address check: most threads never fetch (see lazy-builtin.ts).
const loadNet = lazyBuiltin<typeof import('node:net')>('node:net');
/** `net.isIP`, with node:net loaded on first use: 4, 6, or 0 for not an IP address. */
export const isIP = (input: string): number => loadNet().isIP(input);

/**
 * Which IP addresses fetch_url may connect to: public unicast only. Every
 * special-purpose range an attacker could aim a server-side request at is
 * refused: loopback, private, link-local (cloud metadata lives there),
 * CGNAT, multicast, unspecified, documentation, benchmarking, reserved,
 * and IPv6 forms that embed one of those (IPv4-mapped, NAT64, 6to4).
 */

type Range4 = readonly [base: string, prefix: number, reason: string];

const IPV4_FORBIDDEN: readonly Range4[] = [
  ['0.0.0.0', 8, 'an unspecified ("this network") address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a carrier-grade NAT (shared) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.88.99.0', 24, 'a 6to4 relay address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved or broadcast address'],
];

// Cloud instance metadata endpoints (AWS, GCP, Azure, OpenStack; AWS over IPv6).
const METADATA_ADDRESSES = new Set(['169.254.169.254', '169.254.170.2', 'fd00:ec2::254']);

function ipv4ToNumber(address: string): number {
  return address.split('.').reduce((value, part) => value * 256 + Number(part), 0);
}

function classifyIPv4(address: string): string | undefined {
  const value = ipv4ToNumber(address);
  for (const [base, prefix, reason] of IPV4_FORBIDDEN) {
    const size = 2 ** (32 - prefix);
    const start = ipv4ToNumber(base);
    if (value >= start && value < start + size) return reason;
  }
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address (zone removed), or undefined when it is not one. */
export function parseIPv6(text: string): number[] | undefined {
  const address = text.replace(/%.*$/, '');
  if (isIP(address) !== 6) return undefined;
  let groups = address;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (dotted?.[1] !== undefined) {
    const value = ipv4ToNumber(dotted[1]);
    groups = `${address.slice(0, dotted.index)}${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = groups.split('::');
  const headParts = head === '' ? [] : head.split(':');
  const tailParts = tail === undefined || tail === '' ? [] : tail.split(':');
  const fill = tail === undefined ? 0 : 8 - headParts.length - tailParts.length;
  const parts = [...headParts, ...Array<string>(fill).fill('0'), ...tailParts];
  return parts.map((part) => Number.parseInt(part, 16));
}

function embeddedIPv4(high: number, low: number): string {
  return [high >>> 8, high & 0xff, low >>> 8, low & 0xff].join('.');
}

function classifyIPv6(groups: readonly number[]): string | undefined {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  const upperZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (upperZero && g5 === 0 && g6 === 0 && g7 === 0) return 'the unspecified address';
  if (upperZero && g5 === 0 && g6 === 0 && g7 === 1) return 'a loopback address';
  if (upperZero && (g5 === 0xffff || g5 === 0)) {
    const inner = embeddedIPv4(g6, g7);
    return `an IPv4-mapped address (${inner}${classifyIPv4(inner) ? `, ${classifyIPv4(inner)}` : ''})`;
  }
  if (g0 === 0x64 && g1 === 0xff9b && (g2 === 0 || g2 === 1)) {
    const inner = classifyIPv4(embeddedIPv4(g6, g7));
    return inner === undefined ? undefined : `a NAT64 form of ${inner}`;
  }
  if (g0 === 0x2002) {
    const inner = classifyIPv4(embeddedIPv4(g1, g2));
    return inner === undefined ? undefined : `a 6to4 form of ${inner}`;
  }
  if ((g0 & 0xfe00) === 0xfc00) return 'a unique local (private) address';
  if ((g0 & 0xffc0) === 0xfe80) return 'a link-local address';
  if ((g0 & 0xffc0) === 0xfec0) return 'a site-local address';
  if ((g0 & 0xff00) === 0xff00) return 'a multicast address';
  if (g0 === 0x2001 && g1 < 0x0200) return 'an IETF special-purpose address (Teredo, ORCHID …)';
  if (g0 === 0x2001 && g1 === 0x0db8) return 'a documentation address';
  if ((g0 & 0xe000) !== 0x2000) return 'not a global unicast address';
  return undefined;
}

/** The canonical text of an IP address (IPv6 lowercased and compressed), for comparisons. */
export function canonicalAddress(address: string): string {
  const groups = parseIPv6(address);
  if (groups === undefined) return address;
  const hex = groups.map((group) => group.toString(16)).join(':');
  return hex
    .replace(/(^|:)0(?::0)+(:|$)/, '::')
    .replace(/^:::?/, '::')
    .replace(/:::$/, '::');
}

/**
 * Why `address` must not be fetched ("a loopback address", "the cloud
 * metadata address" …), or undefined when it is a public unicast address.
 * Anything that is not a valid IP literal is refused too.
 */
export function forbiddenAddressReason(address: string): string | undefined {
  if (METADATA_ADDRESSES.has(canonicalAddress(address))) return 'the cloud metadata address';
  if (isIP(address) === 4) return classifyIPv4(address);
  const groups = parseIPv6(address);
  if (groups === undefined) return 'not an IP address';
  return classifyIPv6(groups);
}
