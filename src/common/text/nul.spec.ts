import { findNul, stripNul } from './nul';

describe('NUL handling', () => {
  it.each([
    [{ a: 'x' }, null],
    [{ a: 'x\u0000' }, 'a'],
    [{ a: [{ b: 'ok' }, { c: '\u0000' }] }, 'a[1].c'],
    [{ 'k\u0000': 'v' }, 'k\u0000'],
    ['\u0000', 'body'],
  ])('findNul(%j) = %j', (value, expected) => {
    expect(findNul(value)).toBe(expected);
  });

  it('stripNul replaces U+0000 everywhere and keeps other values', () => {
    expect(stripNul({ a: 'x\u0000y', n: 1, l: ['\u0000'], d: null })).toEqual({ a: 'x\uFFFDy', n: 1, l: ['\uFFFD'], d: null });
  });
});
