import { describe, expect, it } from 'vitest';
import { findFakeToolCall } from '../../src/agent/fake-tool-call.js';
import { CORPUS_TOOLS, FAKE_CALLS, LEGITIMATE_ANSWERS } from './fake-tool-call-corpus.js';

describe('findFakeToolCall on the corpus', () => {
  it('has precision and recall 1.0 over 40+ legitimate answers and 20+ fake calls', () => {
    expect(LEGITIMATE_ANSWERS.length).toBeGreaterThanOrEqual(40);
    expect(FAKE_CALLS.length).toBeGreaterThanOrEqual(20);
    const falsePositives = LEGITIMATE_ANSWERS.filter(
      (text) => findFakeToolCall(text, CORPUS_TOOLS) !== undefined,
    );
    const missed = FAKE_CALLS.filter(
      (fake) => findFakeToolCall(fake.text, CORPUS_TOOLS) === undefined,
    );
    const truePositives = FAKE_CALLS.length - missed.length;
    const precision = truePositives / (truePositives + falsePositives.length);
    const recall = truePositives / FAKE_CALLS.length;
    // The measurement, for the record (the console is guarded in tests).
    process.stderr.write(
      `fake-tool-call corpus: ${LEGITIMATE_ANSWERS.length} legitimate answers, ${FAKE_CALLS.length} fake calls; precision ${precision.toFixed(3)}, recall ${recall.toFixed(3)}\n`,
    );
    expect(falsePositives).toEqual([]);
    expect(missed.map((fake) => fake.format)).toEqual([]);
    expect(precision).toBe(1);
    expect(recall).toBe(1);
  });

  it('names the tool and the format it found', () => {
    expect(
      findFakeToolCall(
        '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>',
        CORPUS_TOOLS,
      ),
    ).toEqual({ tool: 'read_file', format: 'tag' });
    expect(findFakeToolCall('<function=list_dir>{}</function>', CORPUS_TOOLS)).toEqual({
      tool: 'list_dir',
      format: 'llama-function',
    });
    expect(findFakeToolCall('shell(command="ls")', CORPUS_TOOLS)).toEqual({
      tool: 'shell',
      format: 'call-line',
    });
  });
});

describe('findFakeToolCall', () => {
  it("is not a fake call of this agent when the call names a tool outside the agent's set", () => {
    const hermes = '<tool_call>{"name": "web_search", "arguments": {"q": "x"}}</tool_call>';
    expect(findFakeToolCall(hermes, ['read_file'])).toBeUndefined();
    expect(findFakeToolCall(hermes, ['web_search'])).toMatchObject({ tool: 'web_search' });
    expect(findFakeToolCall('read_file(path="a")', [])).toBeUndefined();
  });

  it('is not a fake call when the call comes with an answer of substance', () => {
    const call = '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>';
    expect(findFakeToolCall(`Let me check.\n${call}`, ['read_file'])).toBeDefined();
    const answered = `The file says the port is 8080 and the host is db.internal, as the operators' runbook from March describes it.\n${call}`;
    expect(findFakeToolCall(answered, ['read_file'])).toBeUndefined();
  });

  it('is not a call when the JSON object has keys a call does not have', () => {
    expect(
      findFakeToolCall('{"name": "read_file", "arguments": {}, "result": "42"}', ['read_file']),
    ).toBeUndefined();
    expect(
      findFakeToolCall('{"type": "answer", "name": "read_file", "arguments": {}}', ['read_file']),
    ).toBeUndefined();
  });
});
