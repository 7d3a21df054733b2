import { SseParser } from './sse-parser';

describe('SseParser', () => {
  it.each<[string, string[], Array<{ event: string | null; data: string }>]>([
    ['one event', ['data: a\n\n'], [{ event: null, data: 'a' }]],
    ['split anywhere', ['da', 'ta: h', 'ello\n', '\n'], [{ event: null, data: 'hello' }]],
    ['CRLF', ['data: a\r\n\r\ndata: b\r\n\r\n'], [{ event: null, data: 'a' }, { event: null, data: 'b' }]],
    ['CRLF split between chunks', ['data: a\r', '\n\r', '\ndata: b\n\n'], [{ event: null, data: 'a' }, { event: null, data: 'b' }]],
    ['bare CR', ['data: a\r\r'], [{ event: null, data: 'a' }]],
    ['multi-line data', ['data: a\ndata: b\n\n'], [{ event: null, data: 'a\nb' }]],
    ['comments and unknown fields ignored', [': keep-alive\nid: 3\nretry: 10\ndata: x\n\n'], [{ event: null, data: 'x' }]],
    ['event name', ['event: error\ndata: {}\n\n'], [{ event: 'error', data: '{}' }]],
    ['no space after colon', ['data:x\n\n'], [{ event: null, data: 'x' }]],
    ['an empty event is not dispatched', ['\n\nevent: a\n\n'], []],
    ['a last event without a blank line (flush)', ['data: tail'], [{ event: null, data: 'tail' }]],
  ])('%s', (_label, pieces, expected) => {
    const p = new SseParser();
    const out = pieces.flatMap((c) => p.push(c));
    out.push(...p.flush());
    expect(out).toEqual(expected);
  });

  it('refuses a line longer than its bound', () => {
    const p = new SseParser(10);
    expect(() => p.push('data: 0123456789abcdef')).toThrow(/longer than 10/);
  });
});
