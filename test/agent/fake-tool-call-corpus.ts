/**
 * The fake-tool-call guard's corpus: final answers that mention tools (the
 * guard must never nudge them) and tool calls written as text in the formats
 * models really produce (it must nudge every one). The tool set is an agent's
 * own: `CORPUS_TOOLS`.
 */

export const CORPUS_TOOLS = [
  'read_file',
  'list_dir',
  'write_file',
  'search_files',
  'fetch_url',
  'shell',
  'python',
  'delegate',
  'spawn_agent',
  'wait_agents',
  'send_message',
  'report_progress',
] as const;

/** Final answers that mention tools: never a fake call. */
export const LEGITIMATE_ANSWERS: readonly string[] = [
  // The three the issue reported as nudged.
  'Done. I used read_file (twice) and found the answer: 42.',
  'The answer is 42. I will not need read_file again.',
  'Summary: read_file (error) said the file is missing.',
  'I read notes.md with read_file and listed docs/ with list_dir. The release date is 3 March.',
  'Let me summarise: fetch_url returned a 404 for the pricing page, so the price is unknown.',
  'I called `read_file` on `config.yml`; the port is 8080.',
  'After running shell(`ls`) the folder had three files: a.txt, b.txt and c.txt.',
  '| tool | calls |\n| --- | --- |\n| read_file | 3 |\n| list_dir | 1 |\n\nThe config sets `debug: false`.',
  '- read_file: read 3 files\n- search_files: 2 matches\n\nConclusion: the bug is in parser.ts, line 40.',
  '{"summary": "The port is 8080", "tools_used": ["read_file", "list_dir"]}',
  '{"answer": 42, "sources": [{"tool": "read_file", "path": "a.md"}]}',
  'To read a file yourself, call read_file with a path, for example:\n\n```json\n{"name": "read_file", "arguments": {"path": "notes.md"}}\n```\n\nThe tool returns the text with line numbers, cut at 16,000 characters, and reports an error result when the file is missing or outside the workspace.',
  'The delegate tool fanned the work out to three researchers; all three agreed the answer is Paris.',
  'I did not need spawn_agent or wait_agents: the task was small enough to answer directly. The capital is Canberra.',
  'send_message is not needed here. Final answer: 17 files.',
  'read_file(path) failed because the path was relative; with the absolute path it returned the header: `# Title`.',
  'Nothing ran: python is not available in this sandbox, so I computed it by hand: 2^10 = 1024.',
  'The `write_file` call succeeded and report.md now holds the summary (412 words).',
  'Steps taken:\n1. list_dir(".") to find the files\n2. read_file("README.md")\n3. search_files for TODO\n\nThere are 4 TODOs, all in src/cli.',
  'Steps taken:\n- list_dir(".")\n- read_file("README.md")\n- search_files(pattern="TODO")\n\nThere are 4 TODOs, all in src/cli, and none of them is older than a month.',
  "I'll skip fetch_url since the answer is in the local docs: the default timeout is 30 s.",
  'Let me explain what happened: shell timed out after 60 s, so the build status is unknown; rerun `npm run build` yourself.',
  'The researcher agents used fetch_url 14 times. Key finding: the API limit is 500 requests per minute.',
  'Calling read_file was unnecessary; the answer (42) was in the task itself.',
  'Here is the script:\n\n```python\nimport json\n\ndef load(path):\n    with open(path) as f:\n        return json.load(f)\n```\n\nIt does what read_file does, but parses the JSON too.',
  'report_progress was called at each stage; the final status is green: all 120 tests pass.',
  'I tried search_files("TODO") and found nothing, so there are no TODO markers.',
  'The tool read_file (read-only) cannot change files; the change you asked for needs write_file, which this role does not have. Nothing was changed.',
  'Answer: 3.14159. (Computed with python; no other tool was needed.)',
  'wait_agents returned 3 results: researcher-1 found the price ($20), researcher-2 the date (May 4), researcher-3 nothing.',
  '["read_file", "list_dir", "search_files"]',
  '{"tools": [{"name": "read_file", "description": "Reads a file"}, {"name": "list_dir", "description": "Lists a folder"}]}',
  '{"name": "read_file", "description": "Reads a text file from the workspace", "readOnly": true}',
  "The error came from list_dir: ENOENT: no such file or directory, scandir 'docs'. The docs folder does not exist.",
  'I will not call any more tools. Final answer: the build uses Node 20.',
  'Let me be clear: the answer is no. read_file showed the flag is off.',
  'Thought: the data is complete.\nFinal Answer: 1,234 users signed up in May (from read_file on users.csv).',
  "I'm going to stop here. fetch_url is blocked (network not granted), so I could not check the live site; the cached copy says version 2.1.",
  'Use `read_file("notes.md")` to see it yourself; the summary is: three open bugs, two fixed.',
  'The call was: read_file(path="a.md") → \'hello\'. So the file says hello.',
  'delegate(tasks=[...]) returned two reports; both recommend option B because it halves the cost.',
  '```\n$ ls\na.txt b.txt\n```\nshell listed two files: a.txt and b.txt.',
  "spawn_agent started researcher-2, which finished with: 'The library supports Node 18+'.",
  '## Findings\n\n- The config lives in `config/app.yml` (found with search_files).\n- The port is 8080.\n- read_file could not open secrets.env (permission denied).',
  'read_file.',
  '```python\ndef read_file(path):\n    return open(path).read()\n```\nThis mirrors the read_file tool in plain Python; it raises if the file is missing.',
  '{"name": "Ada Lovelace", "born": 1815, "found_with": "read_file"}',
  'Action: none needed.\nFinal Answer: The file has 12 lines (read_file).',
  'The tool said: `Error: read_file: path must be inside the workspace`. Move the file into the workspace and try again.',
  'I was going to call list_dir, but the task already lists the files: a.md, b.md. Both are drafts.',
  'Using read_file and then write_file, I copied the header into report.md. Done.',
  'Result of shell("wc -l data.csv"): 1001 lines, so 1,000 rows plus the header.',
];

/** Tool calls written as text, in the formats models produce: always a fake call. */
export const FAKE_CALLS: readonly { format: string; text: string }[] = [
  {
    format: 'Hermes <tool_call>',
    text: '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.md"}}\n</tool_call>',
  },
  {
    format: 'Hermes with a lead-in',
    text: 'Let me read the notes first.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.md"}}\n</tool_call>',
  },
  {
    format: 'Hermes, two calls',
    text: '<tool_call>{"name": "list_dir", "arguments": {"path": "."}}</tool_call>\n<tool_call>{"name": "read_file", "arguments": {"path": "a.md"}}</tool_call>',
  },
  {
    format: 'Hermes, left open at the stop token',
    text: '<tool_call>\n{"name": "search_files", "arguments": {"pattern": "TODO"}}',
  },
  {
    format: 'Qwen <tool_call> with a call inside',
    text: '<tool_call>\nread_file(path="notes.md")\n</tool_call>',
  },
  {
    format: 'bare JSON object',
    text: '{"name": "read_file", "arguments": {"path": "notes.md"}}',
  },
  {
    format: 'JSON in a ```json block',
    text: '```json\n{"name": "fetch_url", "arguments": {"url": "https://example.com"}}\n```',
  },
  {
    format: 'JSON block with a lead-in, tool/args keys',
    text: 'I will fetch the page now:\n```json\n{"tool": "fetch_url", "args": {"url": "https://example.com/pricing"}}\n```',
  },
  {
    format: 'JSON array of calls',
    text: '[{"name": "read_file", "arguments": {"path": "a.md"}}, {"name": "read_file", "arguments": {"path": "b.md"}}]',
  },
  {
    format: 'OpenAI tool_calls written out',
    text: '{"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\\"path\\": \\"a.md\\"}"}}]}',
  },
  {
    format: 'OpenAI function object',
    text: '{"type": "function", "function": {"name": "list_dir", "arguments": {"path": "src"}}}',
  },
  {
    format: 'Anthropic tool_use block written out',
    text: '{"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "notes.md"}}',
  },
  {
    format: 'Llama 3.1 JSON (type function, parameters)',
    text: '{"type": "function", "name": "read_file", "parameters": {"path": "notes.md"}}',
  },
  {
    format: 'Llama 3.1 JSON without type',
    text: '{"name": "search_files", "parameters": {"pattern": "TODO", "path": "src"}}',
  },
  {
    format: 'Llama <|python_tag|> JSON',
    text: '<|python_tag|>{"name": "read_file", "parameters": {"path": "notes.md"}}<|eom_id|>',
  },
  {
    format: 'Llama <|python_tag|> built-in call',
    text: '<|python_tag|>fetch_url.call(url="https://example.com")',
  },
  {
    format: 'Llama <function=name>',
    text: '<function=read_file>{"path": "notes.md"}</function>',
  },
  {
    format: 'Llama 3.2 pythonic list',
    text: '[read_file(path="notes.md"), list_dir(path="docs")]',
  },
  { format: 'name(args) line', text: 'read_file(path="notes.md")' },
  {
    format: 'name(args) line with JSON',
    text: 'delegate({"tasks": [{"role": "researcher", "task": "Find the price"}]})',
  },
  {
    format: 'name(args) in a python block',
    text: '```python\nshell(command="ls -la")\n```',
  },
  {
    format: 'functions.name(args)',
    text: 'functions.read_file({"path": "notes.md"})',
  },
  {
    format: 'Mistral [TOOL_CALLS]',
    text: '[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "notes.md"}}]',
  },
  {
    format: 'Mistral [TOOL_CALLS] name[ARGS]',
    text: '[TOOL_CALLS]search_files[ARGS]{"pattern": "TODO"}',
  },
  {
    format: 'ReAct Action / Action Input',
    text: 'Thought: I need the file contents.\nAction: read_file\nAction Input: {"path": "notes.md"}',
  },
  {
    format: 'ReAct JSON (action, action_input)',
    text: '```json\n{"action": "spawn_agent", "action_input": {"role": "researcher", "task": "Find the price"}}\n```',
  },
  {
    format: '<function_calls> / <invoke> XML',
    text: '<function_calls>\n<invoke name="read_file">\n<parameter name="path">notes.md</parameter>\n</invoke>\n</function_calls>',
  },
  {
    format: 'DeepSeek tool-call markers',
    text: '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{"path": "notes.md"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
  },
  {
    format: 'bare JSON after a lead-in line',
    text: 'I\'ll wait for the researchers.\n{"name": "wait_agents", "arguments": {}}',
  },
  {
    format: 'name() with no arguments',
    text: 'Checking the folder.\nlist_dir()',
  },
];
