import { textPrefix } from './attachment.reader';

describe('textPrefix', () => {
  const utf16le = (t: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(t, 'utf16le')]);

  it('reads UTF-8 as before and UTF-16 by its byte order mark (the mark is not text)', () => {
    expect(textPrefix(Buffer.from('héllo'), 100)).toEqual({ text: 'héllo', truncated: false });
    expect(textPrefix(utf16le('héllo 😀'), 100)).toEqual({ text: 'héllo 😀', truncated: false });
    expect(textPrefix(Buffer.from(utf16le('abc').swap16()), 100)).toEqual({ text: 'abc', truncated: false });
  });

  it('cuts UTF-16 on a whole character', () => {
    // mark (2) + "a" (2) + 😀 (4): 7 bytes would cut the emoji; 6 would end on its first half.
    expect(textPrefix(utf16le('a😀b'), 7)).toEqual({ text: 'a', truncated: true });
    expect(textPrefix(utf16le('a😀b'), 8)).toEqual({ text: 'a😀', truncated: true });
  });
});
