import Decimal from 'decimal.js';
import fc from 'fast-check';
import { addAmounts, callCost, compareAmounts, isAmount, normalizeAmount } from './money';

describe('callCost (USD per million tokens, exact decimals)', () => {
  const gpt = { input_per_mtok: '0.15', output_per_mtok: '0.6', cached_input_per_mtok: '0.075' };
  const sonnet = { input_per_mtok: '3', output_per_mtok: '15', cached_input_per_mtok: '0.3' };
  it.each<[string, Parameters<typeof callCost>[0], Parameters<typeof callCost>[1], string]>([
    ['no price', undefined, { input_tokens: 1000, output_tokens: 1000 }, '0'],
    ['zero tokens', gpt, { input_tokens: 0, output_tokens: 0 }, '0'],
    ['1M input', gpt, { input_tokens: 1_000_000, output_tokens: 0 }, '0.15'],
    ['1 token each', gpt, { input_tokens: 1, output_tokens: 1 }, '0.00000075'],
    // 0.1 + 0.2 style sums stay exact: 1000*0.15/1e6 + 2000*0.6/1e6 = 0.00015 + 0.0012
    ['no float noise', gpt, { input_tokens: 1000, output_tokens: 2000 }, '0.00135'],
    // (1200-200)*3 + 200*0.3 + 30*15 = 3000 + 60 + 450 = 3510 -> 0.00351
    ['cached at the cached price', sonnet, { input_tokens: 1200, output_tokens: 30, cached_input_tokens: 200 }, '0.00351'],
    ['cached without a cached price: input price', { input_per_mtok: '3', output_per_mtok: '15' }, { input_tokens: 1200, output_tokens: 30, cached_input_tokens: 200 }, '0.00405'],
    ['more cached than input is capped', sonnet, { input_tokens: 10, output_tokens: 0, cached_input_tokens: 50 }, '0.000003'],
    ['scripted prices', { input_per_mtok: '1', output_per_mtok: '2', cached_input_per_mtok: '0.5' }, { input_tokens: 7, output_tokens: 3 }, '0.000013'],
    ['a tiny price', { input_per_mtok: '0.0000001', output_per_mtok: '0' }, { input_tokens: 1, output_tokens: 5 }, '0.0000000000001'],
    ['a large bill', { input_per_mtok: '75', output_per_mtok: '150' }, { input_tokens: 2_000_000_000, output_tokens: 1_000_000_000 }, '300000'],
  ])('%s', (_n, price, tokens, expected) => expect(callCost(price, tokens)).toBe(expected));
});

describe('amounts', () => {
  it.each<[string[], string]>([
    [[], '0'],
    [['0.1', '0.2'], '0.3'],
    [['0.00351', '0.00429'], '0.0078'],
    [['1', '0.000000000001'], '1.000000000001'],
    [['999999999999.999999999999', '0.000000000001'], '1000000000000'],
  ])('addAmounts(%j) = %s', (a, s) => expect(addAmounts(...a)).toBe(s));

  it.each<[string, string, number]>([
    ['0.3', '0.30', 0],
    ['0.1', '0.09', 1],
    ['5', '5.0000001', -1],
  ])('compareAmounts(%s, %s) = %s', (a, b, c) => expect(compareAmounts(a, b)).toBe(c));

  it.each<[unknown, boolean]>([
    ['10', true],
    ['0.5', true],
    ['0', true],
    ['1.000000000001', true],
    ['-1', false],
    ['1e3', false],
    ['.5', false],
    ['1.', false],
    [10, false],
    ['1234567890123', false],
    ['NaN', false],
  ])('isAmount(%j) = %s', (v, ok) => expect(isAmount(v)).toBe(ok));

  it('normalizes', () => expect(normalizeAmount('10.500')).toBe('10.5'));
});

describe('money: the integer fast path writes what decimal.js writes', () => {
  const D = Decimal.clone({ precision: 60, toExpNeg: -60, toExpPos: 60 });
  const plainOf = (d: Decimal): string => {
    const s = d.toFixed();
    return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
  };
  const decimalArb = (intDigits: number, places: number) =>
    fc
      .tuple(fc.bigInt({ min: 0n, max: 10n ** BigInt(intDigits) - 1n }), fc.option(fc.bigInt({ min: 0n, max: 10n ** BigInt(places) - 1n }), { nil: undefined }), fc.integer({ min: 1, max: places }))
      .map(([i, f, n]) => (f === undefined ? `${i}` : `${i}.${f.toString().padStart(places, '0').slice(0, n)}`));

  it('callCost: tokens x price per million, exactly', () => {
    fc.assert(
      fc.property(decimalArb(6, 12), decimalArb(6, 12), fc.option(decimalArb(6, 12), { nil: undefined }), fc.nat(10_000_000), fc.nat(10_000_000), fc.nat(12_000_000), (input, output, cachedPrice, inTok, outTok, cachedTok) => {
        const price = { input_per_mtok: input, output_per_mtok: output, ...(cachedPrice ? { cached_input_per_mtok: cachedPrice } : {}) };
        const cached = Math.min(cachedTok, inTok);
        const expected = new D(inTok - cached).times(input).plus(new D(cached).times(cachedPrice ?? input)).plus(new D(outTok).times(output)).dividedBy(1_000_000);
        expect(callCost(price, { input_tokens: inTok, output_tokens: outTok, cached_input_tokens: cachedTok })).toBe(plainOf(expected));
      }),
      { numRuns: 300 },
    );
  });

  it('addAmounts and compareAmounts, with up to 18 places (and more, through decimal.js)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(decimalArb(12, 18), decimalArb(3, 25)), { minLength: 1, maxLength: 5 }), (amounts) => {
        expect(addAmounts(...amounts)).toBe(plainOf(amounts.reduce((s, a) => s.plus(a), new D(0))));
        expect(compareAmounts(amounts[0], amounts[amounts.length - 1])).toBe(new D(amounts[0]).comparedTo(amounts[amounts.length - 1]));
      }),
      { numRuns: 300 },
    );
  });
});
