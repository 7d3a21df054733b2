/** One server-sent event (only the fields a Chat Completions stream uses). */
export interface SseMessage {
  event: string | null;
  data: string;
}

/**
 * Incremental parser of the `text/event-stream` format (WHATWG HTML, "event stream
 * interpretation"): feed decoded text in arbitrary pieces, get complete events back. Handles
 * CRLF/CR/LF line ends, comments, multi-line `data:` and a final event without a blank line
 * (`flush()`). Lines longer than `maxLineChars` abort the stream (a broken or hostile server).
 */
export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event: string | null = null;
  private pendingCR = false;

  constructor(private readonly maxLineChars = 4 * 1024 * 1024) {}

  push(chunk: string): SseMessage[] {
    const out: SseMessage[] = [];
    let text = chunk;
    if (this.pendingCR && text.startsWith('\n')) text = text.slice(1); // the LF of a CRLF split across chunks
    this.pendingCR = false;
    this.buffer += text;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer[i];
      if (ch !== '\n' && ch !== '\r') continue;
      this.line(this.buffer.slice(start, i), out);
      if (ch === '\r') {
        if (i + 1 < this.buffer.length) {
          if (this.buffer[i + 1] === '\n') i++;
        } else this.pendingCR = true;
      }
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
    if (this.buffer.length > this.maxLineChars) throw new Error(`SSE line longer than ${this.maxLineChars} characters`);
    return out;
  }

  /** End of input: a last event not followed by a blank line is still delivered. */
  flush(): SseMessage[] {
    const out: SseMessage[] = [];
    if (this.buffer) this.line(this.buffer, out);
    this.buffer = '';
    this.line('', out);
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === '') {
      if (this.data.length) out.push({ event: this.event, data: this.data.join('\n') });
      this.data = [];
      this.event = null;
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
  }
}
