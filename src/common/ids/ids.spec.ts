import { isId, newId } from './ids';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

describe('newId', () => {
  afterEach(() => jest.restoreAllMocks());

  it('is unique and strictly increasing within one millisecond (monotonic)', () => {
    jest.spyOn(Date, 'now').mockReturnValue(1_800_000_000_000);
    const ids = Array.from({ length: 5000 }, () => newId('req'));
    for (const id of ids) expect(isId(id, 'req')).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
    // Same time part throughout.
    expect(new Set(ids.map((id) => id.slice(4, 14))).size).toBe(1);
  });

  it('draws fresh, uniformly spread randomness in every new millisecond (across pool refills)', () => {
    let now = 1_800_000_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => ++now);
    // 2,000 ids x 16 random bytes: the 4 KiB pool is refilled several times.
    const randoms = Array.from({ length: 2000 }, () => newId('run').slice(-16));
    expect(new Set(randoms).size).toBe(randoms.length);
    // Every position takes every one of the 32 symbols (a stuck or biased source would not).
    for (let pos = 0; pos < 16; pos++) {
      const seen = new Set(randoms.map((r) => r[pos]));
      expect([...seen].sort().join('')).toBe(ALPHABET);
    }
  });
});
