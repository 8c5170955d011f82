import { randomBytes } from 'node:crypto';

/**
 * A run id that sorts by start time and is safe as a folder name:
 * `20261130-014500-3f9a`.
 */
export function createRunId(now: Date = new Date()): string {
  const pad = (value: number): string => String(value).padStart(2, '0');
  const date = `${now.getUTCFullYear()}${pad(now.getUTCMonth() + 1)}${pad(now.getUTCDate())}`;
  const time = `${pad(now.getUTCHours())}${pad(now.getUTCMinutes())}${pad(now.getUTCSeconds())}`;
  return `${date}-${time}-${randomBytes(2).toString('hex')}`;
}
