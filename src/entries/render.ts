/**
 * `troupe/render`: the renderers behind the CLI's live view, line mode and
 * `--json`, the run state they share, and the terminal helpers.
 */

export { JsonRenderer } from '../render/json.js';
export type { LineRendererOptions } from '../render/lines.js';
export { formatEventLine, LineRenderer } from '../render/lines.js';
export type { LiveRendererOptions } from '../render/live.js';
export { LiveRenderer } from '../render/live.js';
export type { EventRenderer } from '../render/renderer.js';
export type { AgentView, PriceFunction } from '../render/run-state.js';
export { RunState } from '../render/run-state.js';
export { summaryLines } from '../render/summary.js';
export type { Palette, TerminalOutput } from '../render/terminal.js';
export {
  createPalette,
  createTerminalOutput,
  FrameWriter,
  supportsColor,
} from '../render/terminal.js';
