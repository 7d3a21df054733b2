import { exceedsJsonDepth, JSON_MAX_DEPTH } from './json-depth';

describe('exceedsJsonDepth', () => {
  const nested = (n: number) => '['.repeat(n) + ']'.repeat(n);

  it('counts objects and arrays, up to and including the limit', () => {
    expect(exceedsJsonDepth(nested(JSON_MAX_DEPTH))).toBe(false);
    expect(exceedsJsonDepth(nested(JSON_MAX_DEPTH + 1))).toBe(true);
    expect(exceedsJsonDepth('{"a":{"b":[1,{"c":2}]}}', 4)).toBe(false);
    expect(exceedsJsonDepth('{"a":{"b":[1,{"c":{}}]}}', 4)).toBe(true);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(exceedsJsonDepth(JSON.stringify({ a: '[[[[[[[[', b: 'say \\"[[[[\\" {{{{' }), 1)).toBe(false);
    expect(exceedsJsonDepth('["\\\\", [[]]]', 2)).toBe(true);
  });

  it('is linear: a megabyte of brackets is fine', () => {
    expect(exceedsJsonDepth(nested(500_000))).toBe(true);
    expect(exceedsJsonDepth('[' + '1,'.repeat(500_000) + '1]')).toBe(false);
  });
});
