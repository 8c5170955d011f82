/** A key of the interactive live view, as `parseKeys` names it. */
export type KeyName =
  | 'up'
  | 'down'
  | 'left'
  | 'right'
  | 'pageUp'
  | 'pageDown'
  | 'home'
  | 'end'
  | 'enter'
  | 'escape'
  | 'ctrlC'
  | 'tab'
  | `char:${string}`;

const SEQUENCES: ReadonlyArray<[string, KeyName]> = [
  ['\u001b[A', 'up'],
  ['\u001bOA', 'up'],
  ['\u001b[B', 'down'],
  ['\u001bOB', 'down'],
  ['\u001b[C', 'right'],
  ['\u001bOC', 'right'],
  ['\u001b[D', 'left'],
  ['\u001bOD', 'left'],
  ['\u001b[5~', 'pageUp'],
  ['\u001b[6~', 'pageDown'],
  ['\u001b[H', 'home'],
  ['\u001bOH', 'home'],
  ['\u001b[1~', 'home'],
  ['\u001b[7~', 'home'],
  ['\u001b[F', 'end'],
  ['\u001bOF', 'end'],
  ['\u001b[4~', 'end'],
  ['\u001b[8~', 'end'],
];

/**
 * The keys in one chunk of raw terminal input: arrow, page, home and end
 * sequences (both cursor-key modes), Enter, Escape (a lone ESC, or ESC before
 * something that is no known sequence), Tab, Ctrl-C, and printable characters
 * as `char:<c>`. Unknown escape sequences are skipped whole.
 */
export function parseKeys(chunk: string): KeyName[] {
  const keys: KeyName[] = [];
  let index = 0;
  while (index < chunk.length) {
    const rest = chunk.slice(index);
    const known = SEQUENCES.find(([sequence]) => rest.startsWith(sequence));
    if (known !== undefined) {
      keys.push(known[1]);
      index += known[0].length;
      continue;
    }
    const char = String.fromCodePoint(chunk.codePointAt(index) ?? 0);
    index += char.length;
    if (char === '\u001b') {
      // An unknown CSI sequence (ESC [ params final): skip it; a lone ESC is Escape.
      const csi = /^\[[0-9;?]*[ -/]*[@-~]/.exec(rest.slice(1));
      if (csi !== null) index += csi[0].length;
      else keys.push('escape');
    } else if (char === '\r' || char === '\n') keys.push('enter');
    else if (char === '\u0003') keys.push('ctrlC');
    else if (char === '\t') keys.push('tab');
    else if (char >= ' ' && char !== '\u007f') keys.push(`char:${char}`);
  }
  return keys;
}
