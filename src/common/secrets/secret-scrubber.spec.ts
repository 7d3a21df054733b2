import { SecretScrubber } from './secret-scrubber';

const SECRET = 'crm-token-rotated-99/abc"def\\ghi';
const s = new SecretScrubber([{ name: 'CRM_TOKEN', value: SECRET }]);
const MASK = '[secret:CRM_TOKEN]';

describe('SecretScrubber', () => {
  it('masks the raw value, longest value first', () => {
    const two = new SecretScrubber([
      { name: 'SHORT', value: 'abcdef' },
      { name: 'LONG', value: 'abcdef-123456' },
    ]);
    expect(two.text('x abcdef-123456 y abcdef')).toBe('x [secret:LONG] y [secret:SHORT]');
    expect(s.text(`I got ${SECRET}!`)).toBe(`I got ${MASK}!`);
  });

  it('masks JSON-escaped forms: \\" \\\\ \\/ and \\uXXXX', () => {
    const json = JSON.stringify({ echo: SECRET });
    expect(json).not.toContain(SECRET);
    expect(s.text(json)).toBe(`{"echo":"${MASK}"}`);
    const slashed = json.replace(/\//g, '\\/');
    expect(s.text(slashed)).toBe(`{"echo":"${MASK}"}`);
    const allU = Array.from(SECRET)
      .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .join('');
    expect(s.text(`"${allU}"`)).toBe(`"${MASK}"`);
    expect(s.text(`"${allU.toUpperCase().replace(/\\U/g, '\\u')}"`)).toBe(`"${MASK}"`);
  });

  it('masks a non-ASCII value as UTF-8, as \\u escapes and as UTF-8 read back as Latin-1', () => {
    const v = 'pässwörd-€-geheim';
    const x = new SecretScrubber([{ name: 'P', value: v }]);
    expect(x.text(`a ${v} b`)).toBe('a [secret:P] b');
    expect(x.text(Buffer.from(`a ${v} b`, 'utf8').toString('latin1'))).toBe('a [secret:P] b');
    expect(x.text(JSON.stringify(v, null, 0).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))).toBe('"[secret:P]"');
  });

  it('masks URL-encoded and form-encoded forms', () => {
    const v = 'p@ss word/+=&x';
    const x = new SecretScrubber([{ name: 'P', value: v }]);
    expect(x.text(`q=${encodeURIComponent(v)}&r=1`)).toBe('q=[secret:P]&r=1');
    expect(x.text(`q=${encodeURIComponent(v).replace(/%20/g, '+')}`)).toBe('q=[secret:P]');
    expect(x.text(`q=${encodeURIComponent(v).toLowerCase()}`)).toBe('q=[secret:P]');
  });

  it('masks base64 and base64url of the value, alone and inside a longer encoded text at every alignment', () => {
    const v = 'sk-live-0123456789abcdefghij';
    const x = new SecretScrubber([{ name: 'K', value: v }]);
    expect(x.text(Buffer.from(v).toString('base64'))).not.toContain(Buffer.from(v).toString('base64').slice(0, 8));
    for (const prefix of ['', 'B', 'Be', 'Bearer ', 'user:']) {
      for (const suffix of ['', '!', '!!']) {
        const b64 = Buffer.from(`${prefix}${v}${suffix}`).toString('base64');
        const out = x.text(`Authorization: Basic ${b64}`);
        expect(out).toContain('[secret:K]');
        // What is left is the prefix's and suffix's encoding plus at most two groups at each edge.
        const left = out.replace('Authorization: Basic ', '').split('[secret:K]').join('');
        expect(left.length).toBeLessThanOrEqual(Math.ceil((prefix.length + suffix.length) / 3) * 4 + 8);
        const url = Buffer.from(`${prefix}${v}${suffix}`).toString('base64url');
        expect(x.text(url)).toContain('[secret:K]');
      }
    }
  });

  it('masks a value split across two parts (MCP content parts, chunks)', () => {
    const parts = s.parts(['before crm-token-', 'rotated-99/abc"def\\ghi after']);
    expect(parts.join('')).toBe(`before ${MASK} after`);
    expect(parts.join('|')).not.toContain('crm-token');
    const json = s.json({ content: [{ type: 'text', text: 'x crm-token-rot' }, { type: 'text', text: 'ated-99/abc"def\\ghi y' }] });
    expect(JSON.stringify(json)).not.toContain('crm-token-rot');
    expect(json.content.map((p) => p.text).join('')).toBe(`x ${MASK} y`);
  });

  it('cuts after masking, and masks a prefix of a value left at the cut', () => {
    const long = `${'a'.repeat(490)}${SECRET}${'z'.repeat(100)}`;
    for (let pad = 460; pad < 500; pad++) {
      const text = `${'a'.repeat(pad)}${SECRET} tail ${'z'.repeat(600)}`;
      const out = s.cut(text, 500);
      // Never any 2+ characters of the value's start at the end of the cut text.
      const body = out.slice(0, -3);
      for (let k = 2; k < SECRET.length; k++) expect(body.endsWith(SECRET.slice(0, k))).toBe(false);
      expect(out).not.toContain(SECRET.slice(0, 8));
    }
    expect(s.cut(long, 500)).toContain(MASK);
    expect(s.cut('short', 500)).toBe('short');
  });

  it('scrubs a stream: a value split across chunks never leaves in pieces', () => {
    const text = `Here it is: ${SECRET}. Done.`;
    for (let size = 1; size <= 9; size++) {
      const st = s.stream();
      let out = '';
      for (let i = 0; i < text.length; i += size) out += st.push(text.slice(i, i + size));
      out += st.end();
      expect(out).toBe(`Here it is: ${MASK}. Done.`);
    }
    // Cut short in the middle of the value: its start is masked.
    const st = s.stream();
    const out = st.push('abc crm-token-rot') + st.end(true);
    expect(out).toBe(`abc ${MASK}`);
    // A stream that ends on its own keeps a tail that only looks like a start.
    const ok = s.stream();
    expect(ok.push('ends with crm') + ok.end()).toBe('ends with crm');
  });

  it('is a no-op without values and cheap to combine', () => {
    expect(SecretScrubber.none.text('anything')).toBe('anything');
    expect(SecretScrubber.none.json({ a: ['x'] })).toEqual({ a: ['x'] });
    expect(SecretScrubber.none.with([{ name: 'A', value: 'value-a1' }]).text('value-a1')).toBe('[secret:A]');
  });
});
