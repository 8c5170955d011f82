/** One piece of content after `<think>` tags were taken out. */
export interface ThinkTagPiece {
  kind: 'text' | 'thinking';
  text: string;
}

const OPEN_TAG = '<think>';
const CLOSE_TAG = '</think>';

/**
 * Splits `<think>…</think>` (as DeepSeek-R1 and Qwen models emit through
 * Ollama, vLLM or LM Studio) out of answer text, also when a tag is split
 * across stream chunks. A stray `</think>` is dropped; whitespace right
 * after a closing tag is not part of the answer.
 */
export class ThinkTagSplitter {
  #isInside = false;
  #pending = '';
  #shouldTrimStart = false;

  /** The pieces `text` completes; a possible partial tag at the end is held back. */
  push(text: string): ThinkTagPiece[] {
    let buffer = this.#pending + text;
    this.#pending = '';
    const out: ThinkTagPiece[] = [];
    while (buffer.length > 0) {
      const open = this.#isInside ? -1 : buffer.indexOf(OPEN_TAG);
      const close = buffer.indexOf(CLOSE_TAG);
      const candidates = [open, close].filter((at) => at !== -1);
      if (candidates.length === 0) {
        const keep = partialTagLength(buffer, this.#isInside ? [CLOSE_TAG] : [OPEN_TAG, CLOSE_TAG]);
        this.#emit(out, buffer.slice(0, buffer.length - keep));
        this.#pending = buffer.slice(buffer.length - keep);
        break;
      }
      const at = Math.min(...candidates);
      this.#emit(out, buffer.slice(0, at));
      if (at === open) {
        this.#isInside = true;
        buffer = buffer.slice(at + OPEN_TAG.length);
      } else {
        this.#isInside = false;
        this.#shouldTrimStart = true;
        buffer = buffer.slice(at + CLOSE_TAG.length);
      }
    }
    return out;
  }

  /** Whatever is held back, as the kind it would have been. */
  flush(): ThinkTagPiece[] {
    const out: ThinkTagPiece[] = [];
    this.#emit(out, this.#pending);
    this.#pending = '';
    return out;
  }

  #emit(out: ThinkTagPiece[], raw: string): void {
    const kind = this.#isInside ? 'thinking' : 'text';
    let text = raw;
    if (kind === 'text' && this.#shouldTrimStart) {
      text = text.trimStart();
      if (text.length > 0) this.#shouldTrimStart = false;
    }
    if (text.length === 0) return;
    const last = out.at(-1);
    if (last !== undefined && last.kind === kind) last.text += text;
    else out.push({ kind, text });
  }
}

function partialTagLength(buffer: string, tags: readonly string[]): number {
  let longest = 0;
  for (const tag of tags) {
    for (let length = Math.min(tag.length - 1, buffer.length); length > longest; length -= 1) {
      if (buffer.endsWith(tag.slice(0, length))) {
        longest = length;
        break;
      }
    }
  }
  return longest;
}
