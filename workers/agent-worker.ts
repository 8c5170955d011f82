import { MessagePort, threadId } from 'node:worker_threads';
import { ActorHost } from '../src/runtime/host/actor-host.js';
import { HostConfigSchema, type HostTask } from '../src/runtime/wire/protocol.js';
import { builtinTools } from '../src/tools/catalogue.js';

/**
 * The thread entry of the agent pool: parse the host task's config, build
 * an ActorHost, and host actors until the runtime shuts the host down.
 * Piscina runs this once per thread, as one long-lived task; all logic
 * lives in ActorHost.
 */
export default async function hostActors(task: HostTask): Promise<void> {
  if (!(task.port instanceof MessagePort)) {
    throw new TypeError('The host task needs a MessagePort in `port`.');
  }
  const port = task.port;
  const config = HostConfigSchema.parse(task.config);
  const state = task.state instanceof SharedArrayBuffer ? task.state : undefined;
  const host = await ActorHost.create(config, port, {
    builtins: builtinTools(),
    threadId,
    state,
  });
  await host.run();
  port.close();
}
