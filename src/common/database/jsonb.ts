/** jsonb's key order (length first, then bytes), recursively: what a database read returns. */
export function jsonbOrdered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(jsonbOrdered);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value as Record<string, unknown>).sort((a, b) => {
    const la = Buffer.byteLength(a);
    const lb = Buffer.byteLength(b);
    if (la !== lb) return la - lb;
    return Buffer.compare(Buffer.from(a), Buffer.from(b));
  });
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = jsonbOrdered((value as Record<string, unknown>)[k]);
  return out;
}
