import Decimal from 'decimal.js';

/**
 * Money arithmetic: decimal.js, never binary floats. Amounts travel as plain decimal strings
 * (`"0.001234"`, no exponent); a token count times a price per million tokens is an exact decimal,
 * so costs are exact (not rounded) until a caller chooses to round.
 */
const D = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_EVEN, toExpNeg: -40, toExpPos: 40 });

export const CURRENCY = 'USD';
export interface Money {
  amount: string;
  currency: typeof CURRENCY;
}

/** Prices of a model, USD per million tokens, as decimal strings (the model registry's entry). */
export interface TokenPrice {
  input_per_mtok: string;
  output_per_mtok: string;
  cached_input_per_mtok?: string;
}

export interface CallTokens {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens?: number;
}

const MILLION = new D(1_000_000);
const AMOUNT_RE = /^\d{1,12}(\.\d{1,12})?$/;

/**
 * The common case without decimal.js (it cost ~0.1 ms of a run's CPU, bench/README.md session
 * 11): non-negative decimals with at most 18 places as integers of 10^-18 (BigInt, exact), which
 * covers every price per million tokens with 12 places (tokens x price / 10^6). Anything else
 * (more places, an exponent, a sign) takes decimal.js; both write the same plain string.
 */
const SCALE = 18;
const PLAIN_DECIMAL_RE = /^(\d{1,30})(?:\.(\d+))?$/;
/** `s` as an integer of 10^-`places` units when it is a plain decimal with at most `places` places, else null. */
function scaled(s: string, places: number): bigint | null {
  const m = PLAIN_DECIMAL_RE.exec(s);
  if (!m || (m[2]?.length ?? 0) > places) return null;
  return BigInt(m[1] + (m[2] ?? '').padEnd(places, '0'));
}
function fixedPlain(v: bigint): string {
  const digits = v.toString().padStart(SCALE + 1, '0');
  const int = digits.slice(0, -SCALE);
  const frac = digits.slice(-SCALE).replace(/0+$/, '');
  return frac ? `${int}.${frac}` : int;
}

/** A plain decimal string of `d` (no exponent, no trailing zeros after the point). */
function plain(d: Decimal): string {
  const s = d.toFixed();
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

export function zero(): Money {
  return { amount: '0', currency: CURRENCY };
}

/**
 * The cost of one model call: uncached input at the input price, cached input at the cached
 * price (the input price when the model has none), output (reasoning included: providers bill
 * it as output) at the output price. No price: zero.
 */
export function callCost(price: TokenPrice | undefined, t: CallTokens): string {
  if (!price) return '0';
  const cached = Math.min(Math.max(0, t.cached_input_tokens ?? 0), t.input_tokens);
  // A price per million tokens in units of 10^-12: tokens x price is the cost in units of 10^-18.
  const pin = scaled(price.input_per_mtok, SCALE - 6);
  const pcached = scaled(price.cached_input_per_mtok ?? price.input_per_mtok, SCALE - 6);
  const pout = scaled(price.output_per_mtok, SCALE - 6);
  if (pin !== null && pcached !== null && pout !== null && Number.isSafeInteger(cached) && Number.isSafeInteger(t.input_tokens) && Number.isSafeInteger(t.output_tokens) && t.input_tokens >= 0 && t.output_tokens >= 0) {
    return fixedPlain(BigInt(t.input_tokens - cached) * pin + BigInt(cached) * pcached + BigInt(t.output_tokens) * pout);
  }
  const uncached = new D(t.input_tokens - cached);
  const cost = uncached
    .times(price.input_per_mtok)
    .plus(new D(cached).times(price.cached_input_per_mtok ?? price.input_per_mtok))
    .plus(new D(t.output_tokens).times(price.output_per_mtok))
    .dividedBy(MILLION);
  return plain(cost);
}

export function addAmounts(...amounts: string[]): string {
  let sum = 0n;
  for (const a of amounts) {
    const v = scaled(a, SCALE);
    if (v === null) return addDecimals(amounts);
    sum += v;
  }
  return fixedPlain(sum);
}

function addDecimals(amounts: string[]): string {
  return plain(amounts.reduce((sum, a) => sum.plus(a), new D(0)));
}

/**
 * What is left of `total` after `used` (never below zero) divided by `parts`, cut to 12 decimal
 * places (an amount a client could have set): a subagent's share of its parent's budget.
 */
export function shareOfRest(total: string, parts: number, ...used: string[]): string {
  const rest = new D(total).minus(used.reduce((sum, a) => sum.plus(a), new D(0)));
  if (rest.lte(0)) return '0';
  return plain(rest.div(parts).toDecimalPlaces(12, Decimal.ROUND_DOWN));
}

/** -1, 0 or 1 as `a` is less than, equal to or more than `b`. */
export function compareAmounts(a: string, b: string): number {
  const x = scaled(a, SCALE);
  const y = scaled(b, SCALE);
  if (x !== null && y !== null) return x < y ? -1 : x > y ? 1 : 0;
  return new D(a).comparedTo(b);
}

/** Whether `s` is an amount an admin may set: a non-negative decimal string, at most 12 digits each side of the point. */
export function isAmount(s: unknown): s is string {
  return typeof s === 'string' && AMOUNT_RE.test(s);
}

/** `amount` written as a plain decimal (for storage / responses). */
export function normalizeAmount(amount: string): string {
  return plain(new D(amount));
}
