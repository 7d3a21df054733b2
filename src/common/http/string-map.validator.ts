import { registerDecorator, ValidationOptions } from 'class-validator';

/** A flat object of at most `maxKeys` string keys (<= 64 chars) with string values <= `maxValue` chars. */
export function IsStringMap(maxKeys = 16, maxValue = 512, options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isStringMap',
      target: object.constructor,
      propertyName,
      options: {
        message: `${propertyName} must be an object of at most ${maxKeys} string keys (<= 64 chars) with string values (<= ${maxValue} chars)`,
        ...options,
      },
      validator: {
        validate(value: unknown) {
          if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
          const entries = Object.entries(value as Record<string, unknown>);
          if (entries.length > maxKeys) return false;
          return entries.every(([k, v]) => k.length >= 1 && k.length <= 64 && typeof v === 'string' && v.length <= maxValue);
        },
      },
    });
}

/**
 * Every item of an array is a JSON object (not an array, not a scalar): `@ValidateNested({ each: true })`
 * alone lets `[[]]` through, and the handler then met an array where it expected a part. A value
 * that is not an array passes here (its own `@IsArray` reports it).
 */
export function IsObjectItems(options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isObjectItems',
      target: object.constructor,
      propertyName,
      options: { message: `${propertyName} must contain only objects`, ...options },
      validator: {
        validate(value: unknown) {
          return !Array.isArray(value) || value.every((v) => v !== null && typeof v === 'object' && !Array.isArray(v));
        },
      },
    });
}
