import { describe, expect, it } from 'vitest';
import {
  canonicalAddress,
  forbiddenAddressReason,
  parseIPv6,
} from '../../../src/tools/builtin/address-policy.js';

describe('forbiddenAddressReason', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.1.1', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved or broadcast'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'IPv4-mapped'],
    ['::ffff:7f00:1', 'IPv4-mapped'],
    ['::ffff:8.8.8.8', 'IPv4-mapped'],
    ['::127.0.0.1', 'IPv4-mapped'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 form of a link-local'],
    ['2002:7f00:1::', '6to4 form of a loopback'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['fc00::1', 'unique local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['2001::1', 'Teredo'],
    ['not-an-ip', 'not an IP'],
  ])('refuses %s as %s', (address, reason) => {
    expect(forbiddenAddressReason(address)).toContain(reason);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::6810:84e5',
    '64:ff9b::808:808',
  ])('allows the public address %s', (address) => {
    expect(forbiddenAddressReason(address)).toBeUndefined();
  });
});

describe('parseIPv6', () => {
  it('expands :: and embedded IPv4', () => {
    expect(parseIPv6('::ffff:127.0.0.1')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x7f00, 1]);
    expect(parseIPv6('fd00:ec2::254')).toEqual([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254]);
    expect(parseIPv6('1.2.3.4')).toBeUndefined();
  });
});

describe('canonicalAddress', () => {
  it('gives one spelling for equal IPv6 addresses', () => {
    expect(canonicalAddress('FD00:0EC2:0000:0000:0000:0000:0000:0254')).toBe('fd00:ec2::254');
    expect(canonicalAddress('0:0:0:0:0:0:0:1')).toBe('::1');
    expect(canonicalAddress('127.0.0.1')).toBe('127.0.0.1');
  });
});
