import { describe, expect, it } from 'vitest';
import { Agent, type AgentConfig } from '../src/agent/agent.js';
import { TroupeError } from '../src/errors.js';
import { TraceWriter } from '../src/events/trace.js';
import { ScriptedModel } from '../src/model/providers/scripted.js';
import { ToolRegistry } from '../src/tools/registry.js';

const model = new ScriptedModel({ steps: [] });

function refusal(config: unknown): TroupeError {
  try {
    new Agent(config as AgentConfig);
  } catch (error) {
    expect(error).toBeInstanceOf(TroupeError);
    expect((error as TroupeError).code).toBe('usage.invalid_option');
    return error as TroupeError;
  }
  throw new Error('the Agent was built');
}

describe('new Agent(config) checks what TypeScript would have caught', () => {
  it('says to wrap a model spec in createModel', () => {
    expect(refusal({ name: 'a', model: { provider: 'openai', model: 'gpt-x' } }).message).toBe(
      'model must be a Model, got a model spec: pass createModel(spec) instead of the spec.',
    );
    expect(refusal({ name: 'a' }).message).toMatch(/model must be a Model \(from createModel/);
  });

  it('names a missing name, tools that are not a registry and a system prompt that is not text', () => {
    expect(refusal({ name: '', model }).message).toBe('name must be a non-empty string, got "".');
    expect(refusal({ name: 'a', model, tools: [] }).message).toMatch(
      /tools must be a ToolRegistry: new ToolRegistry/,
    );
    expect(refusal({ name: 'a', model, system: 42 }).message).toMatch(/system must be a string/);
    expect(refusal(undefined).message).toMatch(/needs a config object/);
  });

  it('builds an agent from a well-formed config', () => {
    const agent = new Agent({ name: 'a', model, tools: new ToolRegistry([]), system: 'Be brief.' });
    expect(agent.name).toBe('a');
  });
});

describe('new TraceWriter(path, options) checks its arguments', () => {
  it('names a missing path and a flush interval that is not positive', () => {
    expect(() => new TraceWriter('')).toThrow(/needs the trace file's path, got ""/);
    expect(() => new TraceWriter('/tmp/x.jsonl', { flushIntervalMs: 0 })).toThrow(
      /flushIntervalMs must be a positive number of milliseconds, got 0/,
    );
  });
});
