import type { MessagePort } from 'node:worker_threads';
import type { TroupeError } from '../../errors.js';
import type { HostWireItem, MainToWorkerInput } from './protocol.js';

/**
 * What the runtime hears from its transport. Items of one host arrive in the
 * order the host sent them; `hostDown` comes after the last item of that
 * host, so a host's actors have sent all they ever will by then.
 */
export interface TransportHandlers {
  /** A batch of one host's items; a string item is an event as its JSON text (`HostConfig.eventText`). */
  items(hostId: number, items: HostWireItem[]): void;
  /** A host is gone (its thread crashed, exited or was terminated); `error` says why. */
  hostDown(hostId: number, error: TroupeError): void;
  /** A new host is up and takes actors (a replacement after a crash, or one of the first). */
  hostUp(hostId: number): void;
  /**
   * An error of the transport itself, not of one host. `fatal` means no host
   * is left and none will come (threads that fail while starting): the
   * runtime fails whatever waits for a place.
   */
  error(error: TroupeError, fatal: boolean): void;
}

/**
 * Where actors run. The runtime speaks only this: hosts by number, protocol
 * items in and out. `local` is a worker-thread pool; a later transport puts
 * hosts on other machines. Nothing above this interface knows which.
 */
export interface Transport {
  /** Starts the hosts (idempotent); handlers receive everything from then on. */
  start(handlers: TransportHandlers): void;
  /** Live hosts, in a stable order. */
  hosts(): readonly number[];
  /** Sends one item to a host; items to one host arrive in order. Ignored for a host that is gone. */
  send(hostId: number, item: MainToWorkerInput): void;
  /**
   * Last resort: stops a host at once because `actorId` hung. Its other actors
   * are lost; hostDown follows (a remote transport may stop only the thread
   * that actor runs on, and report its actors' ends as results instead).
   */
  terminate(hostId: number, reason: string, actorId?: string): void;
  /**
   * Sends one item that carries MessagePorts (moved to the host, not copied),
   * behind the items sent before it; false when the host is gone or this
   * transport cannot move ports (its hosts are not threads of this process).
   * Optional: a transport without it gets every item through `send`.
   */
  sendPorts?(hostId: number, item: MainToWorkerInput, ports: readonly MessagePort[]): boolean;
  /** True when a host looks busy or stuck (its heartbeat is late): placement avoids it while others are not. Optional. */
  late?(hostId: number): boolean;
  /**
   * How busy a host's event loop was lately, from 0 to 1; undefined when not
   * known yet. Optional: a transport without it gets `maxActorsPerThread`
   * actors per host at once, as many as they may hold; with it, a host gets
   * more (up to that bound) only while it has time to spare.
   */
  busy?(hostId: number): number | undefined;
  /**
   * Starts one more host when the transport may (it starts with fewer than
   * it can have, and adds them as the scheduler finds every host saturated);
   * false when it is at its limit, or a host it added is still starting.
   * Optional: a transport without it starts all its hosts at once.
   */
  grow?(): boolean;
  /** How many hosts `grow` may still add (0 or absent: none). */
  spareHosts?(): number;
  /**
   * Keeps a finished actor's stored result (already redacted) where a
   * coordinator resumed on another machine finds it. Optional: without it
   * results live only in the run folder.
   */
  storeResult?(key: string, stored: object): void;
  /** Asks every host to shut down, waits up to `graceMs`, then stops what is left. */
  close(graceMs: number): Promise<void>;
}
