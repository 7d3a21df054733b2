/**
 * PostgreSQL text and jsonb cannot hold U+0000. Request bodies carrying it are rejected (400);
 * text produced by models and tools is cleaned with `stripNul` before it is stored.
 */
export function findNul(value: unknown, path = ''): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path || 'body' : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findNul(value[i], `${path}[${i}]`);
      if (hit) return hit;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const p = path ? `${path}.${k}` : k;
      if (k.includes('\u0000')) return p;
      const hit = findNul(v, p);
      if (hit) return hit;
    }
  }
  return null;
}

/** Replaces U+0000 by U+FFFD in every string (keys included) of a JSON-like value. */
export function stripNul<T>(value: T): T {
  if (typeof value === 'string') return (value.includes('\u0000') ? value.replace(/\u0000/g, '\uFFFD') : value) as T;
  if (Array.isArray(value)) return value.map((v) => stripNul(v)) as T;
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [stripNul(k), stripNul(v)])) as T;
  }
  return value;
}
