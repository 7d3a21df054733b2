/**
 * A small validator for the JSON Schema subset the tool parameters use: `type` (object, string,
 * number, integer, boolean, array), `properties`, `required`, `additionalProperties: false`,
 * `minLength`, `maxLength`, `pattern`, `minimum`, `maximum`, `enum`, `items`, `maxItems`.
 * Returns every problem as `path: message` (empty when valid).
 */
export type JsonSchema = {
  type?: 'object' | 'string' | 'number' | 'integer' | 'boolean' | 'array';
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  enum?: unknown[];
  items?: JsonSchema;
  maxItems?: number;
  [key: string]: unknown;
};

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

export function validateJson(schema: JsonSchema, value: unknown, path = 'arguments'): string[] {
  const problems: string[] = [];
  switch (schema.type) {
    case 'object': {
      if (typeOf(value) !== 'object') return [`${path}: must be an object, got ${typeOf(value)}`];
      const obj = value as Record<string, unknown>;
      for (const key of schema.required ?? []) {
        if (!(key in obj) || obj[key] === undefined) problems.push(`${path}.${key}: is required`);
      }
      for (const [key, v] of Object.entries(obj)) {
        const sub = schema.properties?.[key];
        if (sub) problems.push(...validateJson(sub, v, `${path}.${key}`));
        else if (schema.additionalProperties === false) problems.push(`${path}.${key}: is not an allowed property`);
      }
      return problems;
    }
    case 'string':
      if (typeof value !== 'string') return [`${path}: must be a string, got ${typeOf(value)}`];
      if (schema.minLength !== undefined && value.length < schema.minLength) problems.push(`${path}: must have at least ${schema.minLength} characters`);
      if (schema.maxLength !== undefined && value.length > schema.maxLength) problems.push(`${path}: must have at most ${schema.maxLength} characters`);
      if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) problems.push(`${path}: must match ${schema.pattern}`);
      break;
    case 'number':
    case 'integer':
      if (typeof value !== 'number' || !Number.isFinite(value)) return [`${path}: must be ${schema.type === 'integer' ? 'an integer' : 'a number'}, got ${typeOf(value)}`];
      if (schema.type === 'integer' && !Number.isInteger(value)) return [`${path}: must be an integer`];
      if (schema.minimum !== undefined && value < schema.minimum) problems.push(`${path}: must be >= ${schema.minimum}`);
      if (schema.maximum !== undefined && value > schema.maximum) problems.push(`${path}: must be <= ${schema.maximum}`);
      break;
    case 'boolean':
      if (typeof value !== 'boolean') return [`${path}: must be a boolean, got ${typeOf(value)}`];
      break;
    case 'array':
      if (!Array.isArray(value)) return [`${path}: must be an array, got ${typeOf(value)}`];
      if (schema.maxItems !== undefined && value.length > schema.maxItems) problems.push(`${path}: must have at most ${schema.maxItems} items`);
      if (schema.items) value.forEach((v, i) => problems.push(...validateJson(schema.items!, v, `${path}[${i}]`)));
      break;
    default:
      break;
  }
  if (schema.enum && !schema.enum.some((e) => e === value)) problems.push(`${path}: must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  return problems;
}
