/**
 * The one scrubbing rule for resolved secret values: every text that becomes a tool result or a
 * tool error (and the model's output, and audited request bodies on a run) passes through a
 * scrubber built from the values the run resolved, before anything stores, streams, audits or
 * shows it to the model. A value is replaced by `[secret:NAME]` wherever it appears:
 * - as it is, and in the forms a tool commonly echoes it in: JSON-escaped (`\"`, `\\`, `\/`,
 *   `\uXXXX` for every non-ASCII or escapable character), URL-encoded (`encodeURIComponent`, form
 *   encoding with `+`, upper- and lower-case hex), base64 and base64url (at each of the three byte
 *   alignments inside a longer encoded text), and its UTF-8 bytes read back as Latin-1;
 * - across the boundary of two parts (`parts`: MCP content parts, stream chunks);
 * - at a cut (`cut`): masked FIRST, then cut, and any trailing prefix of a value left at the cut
 *   is masked too, so no cut position reveals the start of a secret;
 * - in a stream (`stream()`): a chunk's tail that could be the start of a value is held back
 *   until the next chunk (or the end) says what it is.
 * Pure: no I/O; built per run (or per call) and cheap when empty.
 */

export interface ResolvedSecret {
  name: string;
  value: string;
}

/** Derived forms shorter than this are not masked on their own (a 3-character base64 window is noise). */
const MIN_FORM_LENGTH = 6;

interface Form {
  text: string;
  mask: string;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function jsonForms(value: string): string[] {
  const plain = JSON.stringify(value).slice(1, -1);
  const slash = plain.replace(/\//g, '\\/');
  // Every character outside printable ASCII as \uXXXX (both hex cases), and every character at all.
  const unicode = (upper: boolean) =>
    Array.from(plain)
      .map((c) => {
        const code = c.codePointAt(0)!;
        if (code >= 0x20 && code < 0x7f) return c;
        return c
          .split('')
          .map((u) => {
            const hex = u.charCodeAt(0).toString(16).padStart(4, '0');
            return `\\u${upper ? hex.toUpperCase() : hex}`;
          })
          .join('');
      })
      .join('');
  const everything = Array.from(value)
    .map((c) =>
      c
        .split('')
        .map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`)
        .join(''),
    )
    .join('');
  return [plain, slash, unicode(false), unicode(true), everything, everything.toUpperCase().replace(/\\U/g, '\\u')];
}

function urlForms(value: string): string[] {
  const enc = encodeURIComponent(value);
  const lower = enc.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
  const form = enc.replace(/%20/g, '+');
  // Every byte percent-encoded (some clients encode everything).
  const all = Array.from(Buffer.from(value, 'utf8'))
    .map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`)
    .join('');
  return [enc, lower, form, all, all.toLowerCase()];
}

/** The base64 text that depends only on `value`'s bytes, for each alignment of the value inside a longer byte string. */
function base64Forms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const out: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    // `offset` bytes before the value: its first whole 3-byte group starts at (3 - offset) % 3.
    const start = (3 - offset) % 3;
    const whole = Math.floor((bytes.length - start) / 3) * 3;
    if (whole <= 0) continue;
    const chunk = bytes.subarray(start, start + whole).toString('base64');
    out.push(chunk, chunk.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  // The value alone, padded or not.
  const alone = bytes.toString('base64');
  out.push(alone, alone.replace(/=+$/, ''), bytes.toString('base64url'));
  return out;
}

function formsOf(value: string): string[] {
  const latin1 = Buffer.from(value, 'utf8').toString('latin1');
  return [...jsonForms(value), ...urlForms(value), ...base64Forms(value), latin1, ...jsonForms(latin1)];
}

export class SecretScrubber {
  static readonly none = new SecretScrubber([]);
  /** Longest first: a form that contains another is masked whole. */
  private readonly forms: Form[];
  /** The raw values (and their JSON-escaped and Latin-1 forms), for prefix masking at cuts and stream boundaries. */
  private readonly prefixForms: Form[];
  private readonly pattern: RegExp | null;
  private readonly byText = new Map<string, string>();
  readonly secrets: readonly ResolvedSecret[];

  constructor(resolved: readonly ResolvedSecret[]) {
    const seen = new Set<string>();
    this.secrets = resolved.filter((r) => {
      const key = `${r.name}\u0000${r.value}`;
      if (r.value.length === 0 || seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    const forms: Form[] = [];
    for (const { name, value } of this.secrets) {
      const mask = `[secret:${name}]`;
      forms.push({ text: value, mask });
      for (const f of formsOf(value)) if (f !== value && f.length >= Math.min(MIN_FORM_LENGTH, value.length)) forms.push({ text: f, mask });
    }
    forms.sort((a, b) => b.text.length - a.text.length);
    this.forms = [];
    for (const f of forms) {
      if (this.byText.has(f.text)) continue;
      this.byText.set(f.text, f.mask);
      this.forms.push(f);
    }
    this.prefixForms = this.secrets.flatMap((s) => {
      const mask = `[secret:${s.name}]`;
      const latin1 = Buffer.from(s.value, 'utf8').toString('latin1');
      return [...new Set([s.value, JSON.stringify(s.value).slice(1, -1), latin1])].map((text) => ({ text, mask }));
    });
    this.pattern = this.forms.length ? new RegExp(this.forms.map((f) => escapeRe(f.text)).join('|'), 'g') : null;
  }

  get empty(): boolean {
    return this.pattern === null;
  }

  /** This scrubber and `other`'s values together. */
  with(other: readonly ResolvedSecret[]): SecretScrubber {
    if (other.length === 0) return this;
    return new SecretScrubber([...this.secrets, ...other]);
  }

  /** `text` with every resolved value (in every form above) replaced by its `[secret:NAME]`. */
  text(text: string): string {
    if (this.pattern === null || text.length === 0) return text;
    this.pattern.lastIndex = 0;
    return text.replace(this.pattern, (m) => this.byText.get(m) ?? m);
  }

  /** A JSON value with every string (keys too) scrubbed; an array of strings is scrubbed across its boundaries. */
  json<T>(v: T): T {
    if (this.empty) return v;
    return this.walk(v) as T;
  }

  private walk(v: unknown): unknown {
    if (typeof v === 'string') return this.text(v);
    if (Array.isArray(v)) {
      // Content parts ({type:'text', text}) and plain string arrays: a value split across two is masked.
      if (v.length > 1 && v.every((x) => typeof x === 'string')) return this.parts(v as string[]);
      const textAt = v.flatMap((p, i) => (isTextPart(p) ? [i] : []));
      if (textAt.length > 1) {
        // The text parts in order, masked together (a value split across two of them), other parts as they are.
        const texts = this.parts(textAt.map((i) => (v[i] as { text: string }).text));
        const byIndex = new Map(textAt.map((i, k) => [i, texts[k]]));
        return v.map((p, i) => (byIndex.has(i) ? this.walk({ ...(p as object), text: byIndex.get(i) }) : this.walk(p)));
      }
      return v.map((x) => this.walk(x));
    }
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[this.text(k)] = this.walk(x);
      return out;
    }
    return v;
  }

  /**
   * Texts that are read one after another (MCP content parts, chunks): every value that appears
   * in their concatenation is masked, also one that starts in one part and ends in another (the
   * mask goes into the part where it starts; the rest of it is removed from the parts after).
   */
  parts(texts: readonly string[]): string[] {
    if (this.pattern === null) return [...texts];
    const joined = texts.join('');
    const bounds: number[] = [];
    let at = 0;
    for (const t of texts) {
      bounds.push(at);
      at += t.length;
    }
    const out = texts.map(() => '');
    const partAt = (pos: number) => {
      let i = bounds.length - 1;
      while (i > 0 && bounds[i] > pos) i--;
      return i;
    };
    let last = 0;
    const emit = (from: number, to: number) => {
      // Plain text between matches, kept in the parts it belongs to.
      for (let p = from; p < to; ) {
        const i = partAt(p);
        const end = Math.min(to, i + 1 < bounds.length ? bounds[i + 1] : joined.length);
        out[i] += joined.slice(p, end);
        p = end;
      }
    };
    this.pattern.lastIndex = 0;
    for (let m = this.pattern.exec(joined); m !== null; m = this.pattern.exec(joined)) {
      emit(last, m.index);
      out[partAt(m.index)] += this.byText.get(m[0]) ?? '';
      last = m.index + m[0].length;
      if (m[0].length === 0) this.pattern.lastIndex++;
    }
    emit(last, joined.length);
    return out;
  }

  /**
   * The first `max` characters of `text` (plus `suffix` when cut), masked FIRST and then cut; a
   * trailing prefix of a value at the cut is masked as well, and a mask is never cut in half.
   */
  cut(text: string, max: number, suffix = '...'): string {
    const masked = this.text(text);
    if (masked.length <= max) return masked;
    let head = masked.slice(0, max);
    // A mask cut in half: keep it whole.
    const open = head.lastIndexOf('[secret:');
    if (open >= 0 && head.indexOf(']', open) < 0) {
      const close = masked.indexOf(']', open);
      if (close >= 0) head = masked.slice(0, close + 1);
    }
    return `${this.maskTrailingPrefix(head)}${suffix}`;
  }

  /** `text` whose end is the start of a value: that end masked (the longest such prefix). */
  maskTrailingPrefix(text: string): string {
    const k = this.trailingPrefix(text);
    return k ? `${text.slice(0, text.length - k.length)}${k.mask}` : text;
  }

  /** The longest suffix of `text` that is a proper prefix of a raw value (or of its JSON-escaped or Latin-1 form). */
  private trailingPrefix(text: string): { length: number; mask: string } | null {
    let best: { length: number; mask: string } | null = null;
    for (const f of this.prefixForms) {
      const max = Math.min(f.text.length - 1, text.length);
      for (let len = max; len > (best?.length ?? 0); len--) {
        if (text.endsWith(f.text.slice(0, len))) {
          best = { length: len, mask: f.mask };
          break;
        }
      }
    }
    return best;
  }

  /** A scrubber of a text that arrives in chunks (streamed deltas): see `StreamScrubber`. */
  stream(): StreamScrubber {
    return new StreamScrubber(this);
  }

  /** @internal for StreamScrubber: how much of `text`'s end might be the start of a value. */
  heldBack(text: string): number {
    return this.trailingPrefix(text)?.length ?? 0;
  }
}

function isTextPart(v: unknown): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && (v as { type?: unknown }).type === 'text' && typeof (v as { text?: unknown }).text === 'string';
}

/**
 * Chunks in, scrubbed text out: a value split across chunks is masked. What `push` returns may
 * be shorter than what came in (the tail that could start a value waits); `end` returns the rest.
 */
export class StreamScrubber {
  private pending = '';

  constructor(private readonly scrubber: SecretScrubber) {}

  push(chunk: string): string {
    if (this.scrubber.empty) return chunk;
    const masked = this.scrubber.text(this.pending + chunk);
    const hold = this.scrubber.heldBack(masked);
    this.pending = masked.slice(masked.length - hold);
    return masked.slice(0, masked.length - hold);
  }

  /**
   * The held-back tail. `cut`: the stream was cut short (an abort): a value's prefix at its end is
   * masked, as at any cut; a stream that ended on its own ends as it is (no value was in it).
   */
  end(cut = false): string {
    const rest = this.pending;
    this.pending = '';
    return cut && !this.scrubber.empty ? this.scrubber.maskTrailingPrefix(rest) : rest;
  }
}
