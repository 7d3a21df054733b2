import { CalculatorError, evaluate } from './calculator';

describe('calculator evaluate', () => {
  it.each<[string, number]>([
    ['1 + 2', 3],
    ['2 + 3 * 4', 14],
    ['(2 + 3) * 4', 20],
    ['10 - 4 - 3', 3],
    ['100 / 10 / 5', 2],
    ['2 ^ 3 ^ 2', 512],
    ['-2 ^ 2', -4],
    ['(-2) ^ 2', 4],
    ['2 ^ -1', 0.5],
    ['-3 + 5', 2],
    ['--3', 3],
    ['+4', 4],
    ['2 * -3', -6],
    ['1.5 * 2', 3],
    ['.5 + .25', 0.75],
    ['1e3 / 4', 250],
    ['((((1))))', 1],
    ['0.1 + 0.2', 0.1 + 0.2],
    ['7 / 2', 3.5],
    ['-0', 0],
    [' 3 *\t(4 - 1) ', 9],
  ])('%s = %d', (expr, expected) => {
    expect(evaluate(expr)).toBe(expected);
  });

  it.each<[string, RegExp]>([
    ['1 / 0', /division by zero/],
    ['1 / (2 - 2)', /division by zero/],
    ['', /empty/],
    ['   ', /empty/],
    ['1 +', /unexpected end/],
    ['(1 + 2', /missing "\)"/],
    ['1 + 2)', /unexpected "\)"/],
    ['2 3', /unexpected "3"/],
    ['* 2', /unexpected "\*"/],
    ['1 % 2', /unexpected character "%"/],
    ['10 ^ 400', /not a finite number/],
    ['Math.max(1)', /unexpected character "M"/],
    ['process.exit(1)', /unexpected character "p"/],
    ['constructor', /unexpected character "c"/],
    ['1; 2', /unexpected character ";"/],
    ['`1`', /unexpected character "`"/],
    ['1'.padEnd(300, '+1'), /longer than 256/],
    ['('.repeat(100) + '1' + ')'.repeat(100), /nested too deeply/],
    ['-'.repeat(200) + '1', /nested too deeply/],
  ])('rejects %j', (expr, message) => {
    expect(() => evaluate(expr)).toThrow(CalculatorError);
    expect(() => evaluate(expr)).toThrow(message);
  });

  it('never executes code: a would-be side effect stays undone', () => {
    const g = globalThis as { pwned?: boolean };
    expect(() => evaluate('globalThis.pwned = true')).toThrow(CalculatorError);
    expect(g.pwned).toBeUndefined();
  });
});
