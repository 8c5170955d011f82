import { AsyncLocalStorage } from 'node:async_hooks';
import { format } from 'node:util';

/** A warning a library printed (console.warn) or Node raised (process.emitWarning). */
export interface LibraryWarning {
  source: 'console' | 'node';
  message: string;
}

/** Where a captured warning goes; `false` means it could not take it (it is printed then). */
export type WarningSink = (warning: LibraryWarning) => boolean | undefined;

const scope = new AsyncLocalStorage<WarningSink>();
const fallbacks: WarningSink[] = [];
let originals: { warn: typeof console.warn; emitWarning: typeof process.emitWarning } | undefined;

/**
 * Runs `fn` with `sink` as the place for warnings raised inside it (across
 * its awaits): an agent runs its loop in one, so an SDK's warning during its
 * model call becomes that agent's event.
 */
export function withWarningSink<T>(sink: WarningSink, fn: () => T): T {
  return scope.run(sink, fn);
}

function deliver(warning: LibraryWarning): void {
  const sink = scope.getStore() ?? fallbacks.at(-1);
  if (sink === undefined) {
    originals?.warn(warning.message);
    return;
  }
  let taken: boolean | undefined = false;
  try {
    taken = sink(warning);
  } catch {
    taken = false;
  }
  if (taken === false) originals?.warn(warning.message);
}

function describeWarning(warning: string | Error, rest: unknown[]): string {
  if (warning instanceof Error) return `${warning.name}: ${warning.message}`;
  const first = rest[0];
  const type =
    typeof first === 'string'
      ? first
      : typeof first === 'object' && first !== null && 'type' in first
        ? String((first as { type?: unknown }).type ?? 'Warning')
        : 'Warning';
  return `${type}: ${warning}`;
}

/**
 * Takes console.warn and process.emitWarning of this thread until the
 * returned function is called: what they say goes to the warning sink of the
 * code that raised it (see withWarningSink), else to `fallback`, instead of
 * the terminal, where it would tear a live view. Calls nest; the last
 * fallback installed is used.
 */
export function captureWarnings(fallback: WarningSink): () => void {
  if (originals === undefined) {
    // biome-ignore lint/suspicious/noConsole: taking console.warn over is the point.
    const saved = { warn: console.warn, emitWarning: process.emitWarning };
    originals = saved;
    console.warn = (...args: unknown[]): void => {
      deliver({ source: 'console', message: format(...args) });
    };
    process.emitWarning = ((warning: string | Error, ...rest: unknown[]): void => {
      deliver({ source: 'node', message: describeWarning(warning, rest) });
    }) as typeof process.emitWarning;
  }
  fallbacks.push(fallback);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    fallbacks.splice(fallbacks.lastIndexOf(fallback), 1);
    if (fallbacks.length === 0 && originals !== undefined) {
      console.warn = originals.warn;
      process.emitWarning = originals.emitWarning;
      originals = undefined;
    }
  };
}
