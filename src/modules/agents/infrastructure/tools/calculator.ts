/**
 * A safe arithmetic evaluator for the `calculator` tool: numbers (decimals, `.5`, `1e3`),
 * `+ - * / ^`, parentheses and unary minus/plus. A recursive-descent parser over a token list;
 * it never evaluates code (no eval, no Function) and bounds length and nesting.
 *
 *   expr   := term (('+' | '-') term)*
 *   term   := unary (('*' | '/') unary)*
 *   unary  := ('-' | '+') unary | power
 *   power  := atom ('^' unary)?          (right-associative; -2^2 = -4, 2^-1 = 0.5)
 *   atom   := number | '(' expr ')'
 */
export class CalculatorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CalculatorError';
  }
}

export const CALCULATOR_MAX_LENGTH = 256;
const MAX_DEPTH = 64;

type Token = { kind: 'num'; value: number; pos: number } | { kind: 'op'; value: string; pos: number };

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  const numRe = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
  let i = 0;
  while (i < input.length) {
    const ch = input[i];
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i++;
      continue;
    }
    if ('+-*/^()'.includes(ch)) {
      tokens.push({ kind: 'op', value: ch, pos: i });
      i++;
      continue;
    }
    numRe.lastIndex = i;
    const m = numRe.exec(input);
    if (m) {
      tokens.push({ kind: 'num', value: Number(m[0]), pos: i });
      i += m[0].length;
      continue;
    }
    throw new CalculatorError(`unexpected character "${ch}" at position ${i + 1}`);
  }
  return tokens;
}

export function evaluate(expression: string): number {
  if (typeof expression !== 'string') throw new CalculatorError('expression must be a string');
  if (expression.length > CALCULATOR_MAX_LENGTH) throw new CalculatorError(`expression is longer than ${CALCULATOR_MAX_LENGTH} characters`);
  const tokens = tokenize(expression);
  if (tokens.length === 0) throw new CalculatorError('expression is empty');
  let pos = 0;
  let depth = 0;

  const peek = (): Token | undefined => tokens[pos];
  const isOp = (t: Token | undefined, ops: string): t is Token & { kind: 'op' } => !!t && t.kind === 'op' && ops.includes(t.value);
  const enter = () => {
    if (++depth > MAX_DEPTH) throw new CalculatorError('expression is nested too deeply');
  };

  const expr = (): number => {
    enter();
    let v = term();
    while (isOp(peek(), '+-')) {
      const op = tokens[pos++].value;
      const r = term();
      v = op === '+' ? v + r : v - r;
    }
    depth--;
    return v;
  };
  const term = (): number => {
    let v = unary();
    while (isOp(peek(), '*/')) {
      const op = tokens[pos++].value;
      const r = unary();
      if (op === '/') {
        if (r === 0) throw new CalculatorError('division by zero');
        v = v / r;
      } else v = v * r;
    }
    return v;
  };
  const unary = (): number => {
    if (isOp(peek(), '+-')) {
      const op = tokens[pos++].value;
      enter();
      const v = unary();
      depth--;
      return op === '-' ? -v : v;
    }
    return power();
  };
  const power = (): number => {
    const base = atom();
    if (isOp(peek(), '^')) {
      pos++;
      enter();
      const exp = unary();
      depth--;
      return Math.pow(base, exp);
    }
    return base;
  };
  const atom = (): number => {
    const t = peek();
    if (!t) throw new CalculatorError('unexpected end of expression');
    if (t.kind === 'num') {
      pos++;
      return t.value;
    }
    if (t.value === '(') {
      pos++;
      const v = expr();
      const close = peek();
      if (!isOp(close, ')')) throw new CalculatorError(close ? `expected ")" at position ${close.pos + 1}` : 'missing ")"');
      pos++;
      return v;
    }
    throw new CalculatorError(`unexpected "${t.value}" at position ${t.pos + 1}`);
  };

  const result = expr();
  const rest = peek();
  if (rest) throw new CalculatorError(`unexpected "${rest.kind === 'num' ? String(rest.value) : rest.value}" at position ${rest.pos + 1}`);
  if (!Number.isFinite(result)) throw new CalculatorError('the result is not a finite number');
  return Object.is(result, -0) ? 0 : result;
}
