import Ajv, { ValidateFunction } from 'ajv';

/**
 * JSON Schema validation of tool arguments with ajv (CONTRACT section 13). Schemas come from
 * agent definitions and MCP servers: unknown keywords and formats are tolerated, compiled
 * validators are cached by the schema's text.
 */
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const cache = new Map<string, ValidateFunction>();
const MAX_CACHED = 1000;

function compiled(schema: unknown): ValidateFunction {
  const key = JSON.stringify(schema);
  let v = cache.get(key);
  if (!v) {
    const { $schema: _ignored, ...rest } = (schema ?? {}) as Record<string, unknown>;
    v = ajv.compile(rest);
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(key, v);
  }
  return v;
}

/** null when the schema compiles, else why not. */
export function schemaProblem(schema: unknown): string | null {
  try {
    compiled(schema);
    return null;
  } catch (err) {
    return `is not a valid JSON Schema: ${(err as Error).message.slice(0, 200)}`;
  }
}

/** Every problem of `value` against `schema` as `arguments<path>: message` (empty when valid). */
export function validateArguments(schema: unknown, value: unknown): string[] {
  let v: ValidateFunction;
  try {
    v = compiled(schema);
  } catch (err) {
    return [`the tool's parameters are not a valid JSON Schema: ${(err as Error).message.slice(0, 200)}`];
  }
  if (v(value)) return [];
  return (v.errors ?? []).map((e) => `arguments${e.instancePath.replace(/\//g, '.')}: ${e.message ?? 'is invalid'}`);
}
