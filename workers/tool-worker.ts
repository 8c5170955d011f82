import { MessagePort, workerData } from 'node:worker_threads';
import { errorMessage } from '../src/errors.js';
import { ToolHost } from '../src/runtime/host/tool-host.js';
import { ToolHostConfigSchema, type ToolHostTask } from '../src/runtime/wire/tool-protocol.js';
import { loadToolModules } from '../src/tools/tool-modules.js';

/**
 * The thread entry of the tool pool: load the run's tool modules, build a
 * ToolHost and serve tool calls until the runtime shuts the pool down.
 * Piscina runs this once per thread, as one long-lived task.
 */
const config = ToolHostConfigSchema.parse(workerData);

export default async function hostTools(task: ToolHostTask): Promise<void> {
  if (!(task.port instanceof MessagePort) || !(task.state instanceof SharedArrayBuffer)) {
    throw new TypeError('The tool host task needs a MessagePort in `port` and shared `state`.');
  }
  const port = task.port;
  let host: ToolHost;
  try {
    host = new ToolHost(config, port, task.state, await loadToolModules(config.toolModules));
  } catch (error) {
    host = new ToolHost(config, port, task.state, [], errorMessage(error));
  }
  host.watchFaults();
  await host.run();
  port.close();
}
