import { findUnsafeText, sanitizeJson, sanitizeJsonText, sanitizeText, TextDeltaSanitizer } from './unsafe-text';

describe('unsafe text (U+0000 and lone surrogates)', () => {
  it.each([
    [{ a: 'x' }, null],
    [{ a: 'x\u0000' }, 'a'],
    [{ a: [{ b: 'ok' }, { c: '\u0000' }] }, 'a[1].c'],
    [{ 'k\u0000': 'v' }, 'k\u0000'],
    ['\u0000', 'body'],
    [{ a: 'bad \ud800 char' }, 'a'],
    [{ a: ['\udc00x'] }, 'a[0]'],
    [{ 'k\udbff': 'v' }, 'k\udbff'],
    [{ a: 'emoji 😀 is a valid pair' }, null],
    [{ a: '\ud83d\ude00' }, null],
  ])('findUnsafeText(%j) names %j', (value, expected) => {
    expect(findUnsafeText(value)?.field ?? null).toBe(expected);
  });

  it('findUnsafeText says what is wrong', () => {
    expect(findUnsafeText({ a: 'x\u0000' })).toEqual({ field: 'a', problem: 'must not contain U+0000' });
    expect(findUnsafeText({ a: { b: '\ud800' } })).toEqual({ field: 'a.b', problem: 'must not contain a lone UTF-16 surrogate' });
  });

  it('sanitizeText replaces U+0000 and lone surrogates, keeps valid pairs', () => {
    expect(sanitizeText('a\u0000b')).toBe('a\uFFFDb');
    expect(sanitizeText('x\ud800y')).toBe('x\uFFFDy');
    expect(sanitizeText('\udc00\ud800')).toBe('\uFFFD\uFFFD');
    expect(sanitizeText('ok 😀')).toBe('ok 😀');
  });

  it('sanitizeJson replaces unsafe text everywhere (keys too) and keeps other values', () => {
    expect(sanitizeJson({ a: 'x\u0000y', n: 1, l: ['\u0000', '\ud800'], d: null, 'k\udfff': true })).toEqual({
      a: 'x\uFFFDy',
      n: 1,
      l: ['\uFFFD', '\uFFFD'],
      d: null,
      'k\uFFFD': true,
    });
    const clean = { a: 'fine 😀', b: ['\\u0000 is only text'] };
    expect(sanitizeJson(clean)).toBe(clean);
  });

  it('sanitizeJsonText leaves escaped backslashes alone and works at any depth', () => {
    expect(sanitizeJsonText(JSON.stringify({ a: '\\ud800', b: '\\\ud800', c: '\u0000' }))).toBe(String.raw`{"a":"\\ud800","b":"\\\ufffd","c":"\ufffd"}`);
    const text = '['.repeat(50_000) + '"\\ud800"' + ']'.repeat(50_000);
    expect(sanitizeJsonText(text)).toBe('['.repeat(50_000) + '"\\ufffd"' + ']'.repeat(50_000));
  });

  it('TextDeltaSanitizer keeps a pair split across deltas and cleans lone halves', () => {
    const s = new TextDeltaSanitizer();
    const out = [s.push('a\ud83d'), s.push('\ude00b\ud800'), s.push('c'), s.push('\udc00'), s.push('end\ud83d'), s.end()];
    expect(out.join('')).toBe('a😀b\uFFFDc\uFFFDend\uFFFD');
    expect(out[0]).toBe('a');
  });
});
