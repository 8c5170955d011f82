import { z } from 'zod';
import { errorMessage, isTroupeError, TroupeError } from '../../errors.js';
import { type AnyChannel, formatChannelMessage, validatePayload } from '../../roles/channel.js';
import type { Mailbox } from './mailbox.js';

/** What the router needs from the runtime to move messages. */
export interface RouterDelivery {
  /** Puts a message into a subscriber's inbox (its mailbox slot is already taken). */
  deliver(
    actorId: string,
    message: { messageId: string; content: string; channel: string; from: string },
  ): void;
  /** Tells a subscriber that `channel` has no publisher left. */
  close(actorId: string, channel: string): void;
  /** Reports an accepted publication (the `message.sent` event). */
  sent(from: string, channel: string, messageId: string, payload: unknown): void;
}

/** The answer to a publication, as the publisher's tool reports it. */
export interface PublishAnswer {
  ok: boolean;
  message: string;
  code?: 'channel.invalid_payload' | 'channel.unknown' | 'mailbox.full' | undefined;
}

/** One accepted publication, as a reused publisher replays it on resume. */
export const PublishedMessageSchema = z.object({ channel: z.string(), payload: z.unknown() });
export type PublishedMessage = z.infer<typeof PublishedMessageSchema>;

interface Subscriber {
  actorId: string;
  mailbox: Mailbox;
  closed: Set<string>;
}

interface RoleEntry {
  publishes: string[];
  subscriber: Subscriber | undefined;
  /** Its accepted publications, in order. */
  published: PublishedMessage[];
  /** What each publication was answered. */
  answers: PublishAnswer[];
  /** After a restart: how many of its earlier publications it has made again (see `restarted`). */
  again: number | undefined;
}

/**
 * Routes channel messages between actors, wherever they run. A payload is
 * validated against the channel's zod schema before anything is delivered;
 * an invalid one goes back to the publisher with the validation message.
 * A channel closes for its subscribers when its last live publisher has
 * finished: each subscriber then gets one close notice, behind every message
 * already delivered to it.
 */
export class Router {
  readonly #delivery: RouterDelivery;
  readonly #channels = new Map<string, AnyChannel>();
  readonly #publishers = new Map<string, Set<string>>();
  readonly #subscribers = new Map<string, Map<string, Subscriber>>();
  readonly #roles = new Map<string, RoleEntry>();

  constructor(delivery: RouterDelivery) {
    this.#delivery = delivery;
  }

  /** Makes a channel known. Two different channels with one name are a configuration error. */
  addChannel(channel: AnyChannel): void {
    const known = this.#channels.get(channel.name);
    if (known !== undefined && known !== channel) {
      if (known.schema !== channel.schema) {
        throw new TroupeError(
          'usage.invalid_option',
          `Two different channels are named "${channel.name}"; define each channel once and share it between roles.`,
        );
      }
      return;
    }
    this.#channels.set(channel.name, channel);
  }

  /** Adds a live actor with the channels it publishes on and subscribes to. */
  addActor(
    actorId: string,
    publishes: readonly AnyChannel[],
    subscribes: readonly AnyChannel[],
    mailbox: Mailbox,
  ): void {
    for (const channel of [...publishes, ...subscribes]) this.addChannel(channel);
    this.#addPublishes(actorId, publishes);
    let subscriber: Subscriber | undefined;
    if (subscribes.length > 0) {
      subscriber = { actorId, mailbox, closed: new Set() };
      for (const channel of subscribes) {
        let map = this.#subscribers.get(channel.name);
        if (map === undefined) {
          map = new Map();
          this.#subscribers.set(channel.name, map);
        }
        map.set(actorId, subscriber);
        // Nobody left to publish: closed from the start.
        if ((this.#publishers.get(channel.name)?.size ?? 0) === 0)
          this.#close(subscriber, channel.name);
      }
    }
    this.#roles.set(actorId, {
      publishes: publishes.map((channel) => channel.name),
      subscriber,
      published: [],
      answers: [],
      again: undefined,
    });
  }

  /**
   * Adds a publisher that takes no messages: a finished publisher reused from
   * an earlier run (resume), live again until `replay` has published its
   * messages, so that no subscriber is told its channel closed before then.
   */
  addPublisher(actorId: string, publishes: readonly AnyChannel[]): void {
    for (const channel of publishes) this.addChannel(channel);
    this.#addPublishes(actorId, publishes);
    this.#roles.set(actorId, {
      publishes: publishes.map((channel) => channel.name),
      subscriber: undefined,
      published: [],
      answers: [],
      again: undefined,
    });
  }

  /**
   * Publishes again, in order and validated as always, what a reused
   * publisher (see addPublisher) published in the earlier run, then removes
   * it: its channels close for their subscribers behind the replayed
   * messages. Resolves with the refusals (a payload that no longer fits the
   * channel, a full mailbox); never rejects.
   */
  async replay(from: string, messages: readonly PublishedMessage[]): Promise<PublishAnswer[]> {
    const refused: PublishAnswer[] = [];
    try {
      for (const message of messages) {
        const answer = await this.publish(from, message.channel, message.payload);
        if (!answer.ok) refused.push(answer);
      }
    } finally {
      this.removeActor(from);
    }
    return refused;
  }

  /**
   * Removes a finished actor; channels whose last publisher it was close for
   * their subscribers. Returns the publications it made that were accepted
   * (validated payloads, in order), for the result store.
   */
  removeActor(actorId: string): PublishedMessage[] {
    const entry = this.#roles.get(actorId);
    if (entry === undefined) return [];
    this.#roles.delete(actorId);
    for (const map of this.#subscribers.values()) map.delete(actorId);
    for (const name of entry.publishes) {
      const set = this.#publishers.get(name);
      set?.delete(actorId);
      if (set !== undefined && set.size === 0) {
        for (const subscriber of this.#subscribers.get(name)?.values() ?? [])
          this.#close(subscriber, name);
      }
    }
    return entry.published;
  }

  /**
   * Publishes `payload` from `from` on `channelName`. Resolves when every
   * live subscriber has it in its mailbox (a full mailbox under 'block' makes
   * this wait). Resolves, never rejects: refusals are answers.
   */
  async publish(from: string, channelName: string, payload: unknown): Promise<PublishAnswer> {
    const channel = this.#channels.get(channelName);
    const entry = this.#roles.get(from);
    if (channel === undefined || entry === undefined || !entry.publishes.includes(channelName)) {
      return {
        ok: false,
        code: 'channel.unknown',
        message: `You may not publish on "${channelName}": it is not one of your role's channels.`,
      };
    }
    const valid = validatePayload(channel, payload);
    if (!valid.ok)
      return {
        ok: false,
        code: 'channel.invalid_payload',
        message: `${valid.message}\nFix the payload and publish again.`,
      };

    // Numbered per publisher, so a resumed publisher's replayed publication
    // gets the same id (and its tool result the same text) as the first time.
    const again = this.#again(entry, channelName, valid.payload);
    if (again !== undefined) return again;
    const messageId = `${from}/m${entry.published.length + 1}`;
    const content = formatChannelMessage(channelName, from, valid.payload);
    const targets = [...(this.#subscribers.get(channelName)?.values() ?? [])].filter(
      (subscriber) => subscriber.actorId !== from && !subscriber.closed.has(channelName),
    );
    this.#delivery.sent(from, channelName, messageId, valid.payload);
    entry.published.push({ channel: channelName, payload: valid.payload });
    const refused: string[] = [];
    let delivered = 0;
    await Promise.all(
      targets.map(async (subscriber) => {
        try {
          await subscriber.mailbox.reserve();
        } catch (error) {
          // A subscriber that finished meanwhile just does not get it; a full one is reported.
          if (isTroupeError(error, 'mailbox.full'))
            refused.push(`${subscriber.actorId} (${errorMessage(error)})`);
          return;
        }
        delivered += 1;
        this.#delivery.deliver(subscriber.actorId, {
          messageId,
          content,
          channel: channelName,
          from,
        });
      }),
    );
    const answer: PublishAnswer =
      refused.length > 0
        ? {
            ok: false,
            code: 'mailbox.full',
            message: `Published ${messageId} to ${delivered} subscriber${delivered === 1 ? '' : 's'}, but it was refused by ${refused.join('; ')}.`,
          }
        : {
            ok: true,
            message: `Published ${messageId} on "${channelName}" to ${delivered} subscriber${delivered === 1 ? '' : 's'}.`,
          };
    entry.answers.push(answer);
    return answer;
  }

  /**
   * An actor starts another attempt in this run (its thread died, or it is
   * retried): as it replays its journal it publishes again what it published
   * before. Those publications, made again in the same order with the same
   * payloads, are not delivered a second time (every subscriber has them,
   * and a restarted subscriber reads them again from its own log); each gets
   * the answer it got the first time, so the publisher's history is as
   * before. The first publication that differs is delivered as new, and so
   * is everything after it.
   */
  restarted(actorId: string): void {
    const entry = this.#roles.get(actorId);
    if (entry !== undefined && entry.published.length > 0) entry.again = 0;
  }

  // The earlier answer when this publication is one a restarted publisher made before; else undefined.
  #again(entry: RoleEntry, channel: string, payload: unknown): PublishAnswer | undefined {
    const index = entry.again;
    if (index === undefined) return undefined;
    const earlier = entry.published[index];
    const answer = entry.answers[index];
    if (
      earlier === undefined ||
      answer === undefined ||
      earlier.channel !== channel ||
      JSON.stringify(earlier.payload) !== JSON.stringify(payload)
    ) {
      entry.again = undefined;
      return undefined;
    }
    entry.again = index + 1 < entry.published.length ? index + 1 : undefined;
    return answer;
  }

  /** The channels already closed for a subscriber (a restarted actor is told again). */
  closedFor(actorId: string): string[] {
    return [...(this.#roles.get(actorId)?.subscriber?.closed ?? [])];
  }

  #addPublishes(actorId: string, publishes: readonly AnyChannel[]): void {
    for (const channel of publishes) {
      let set = this.#publishers.get(channel.name);
      if (set === undefined) {
        set = new Set();
        this.#publishers.set(channel.name, set);
      }
      set.add(actorId);
    }
  }

  #close(subscriber: Subscriber, channel: string): void {
    if (subscriber.closed.has(channel)) return;
    subscriber.closed.add(channel);
    this.#delivery.close(subscriber.actorId, channel);
  }
}
