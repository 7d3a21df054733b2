import { ArgumentMetadata, Injectable, PipeTransform, ValidationError, ValidationPipe } from '@nestjs/common';
import { ValidateIf } from 'class-validator';
import { DomainError, FieldError } from '../errors/domain-error';
import { findUnsafeText } from '../text/unsafe-text';

/**
 * How relevant a failed class-validator rule is for the client, lowest first: the field should
 * not be there or is missing; then its type; then the set of values it may take; then its format
 * (and custom rules); then its size or range. Only the most relevant failure of a field is
 * reported: `{"title": 5}` fails both `isString` and `maxLength`, and only "must be a string"
 * helps (a length limit says nothing useful about a number).
 */
const RULE_RANK: Record<string, number> = {
  whitelistValidation: 0,
  isDefined: 0,
  isString: 1,
  isInt: 1,
  isNumber: 1,
  isBoolean: 1,
  isArray: 1,
  isObject: 1,
  isObjectItems: 2,
  isDate: 1,
  nestedValidation: 2,
  isIn: 3,
  isEnum: 3,
  equals: 3,
  min: 5,
  max: 5,
  minLength: 5,
  maxLength: 5,
  length: 5,
  arrayMinSize: 5,
  arrayMaxSize: 5,
  arrayNotEmpty: 5,
  isNotEmpty: 5,
};
const DEFAULT_RANK = 4;

/** The largest `integer` column value (revisions are int4): integer fields compared with one are bounded by it. */
export const INT32_MAX = 2_147_483_647;

/**
 * The body field may be left out, and `null` is not leaving it out: class-validator's
 * `@IsOptional()` skips null too, so `{"default_concurrency": null}` passed validation and met a
 * NOT NULL column (a 500), and `{"metadata": null}` was quietly ignored. Here a null is checked like
 * any other value and fails the field's type rule (400 naming the field). A field that takes null
 * says so with `nullable: true` in its Swagger property and keeps `@IsOptional()`.
 */
export function MayOmit(): PropertyDecorator {
  return ValidateIf((_object: object, value: unknown) => value !== undefined);
}

/** `input.content[0].text`: array items by index (as the U+0000 check names them), properties by dot. */
function childPath(parent: string, property: string): string {
  if (!parent) return property;
  return /^\d+$/.test(property) ? `${parent}[${property}]` : `${parent}.${property}`;
}

/** The message of one failed rule, naming the field by its full path ("limits.max_steps must ..."). */
function fieldMessage(rule: string, message: string, property: string, field: string): string {
  if (rule === 'whitelistValidation') return `${field} is not allowed (unknown or server-owned field)`;
  if (field !== property && message.startsWith(`${property} `)) return field + message.slice(property.length);
  return message;
}

/**
 * One error per field, in the order class-validator reports the fields: its most relevant failed
 * rule (`RULE_RANK`; the first reported among equally relevant ones), then its nested fields.
 */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const field = childPath(parent, e.property);
    let best: { rank: number; rule: string; message: string } | null = null;
    for (const [rule, message] of Object.entries(e.constraints ?? {})) {
      const rank = RULE_RANK[rule] ?? DEFAULT_RANK;
      if (!best || rank < best.rank) best = { rank, rule, message };
    }
    if (best && !out.some((o) => o.field === field)) out.push({ field, message: fieldMessage(best.rule, best.message, e.property, field) });
    if (e.children?.length) out.push(...flattenValidationErrors(e.children, field));
  }
  return out;
}

/**
 * Validates DTOs with class-validator. Unknown and server-owned fields are rejected (400
 * `invalid_request`, details.errors = [{field, message}], one per field), as is a body that is
 * not an object. The envelope's message joins the first three field messages.
 */
@Injectable()
export class ContractValidationPipe implements PipeTransform {
  private readonly inner = new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => {
      const fieldErrors = flattenValidationErrors(errors);
      const summary = fieldErrors
        .slice(0, 3)
        .map((e) => e.message)
        .join('; ');
      return new DomainError('invalid_request', summary || 'invalid request', { errors: fieldErrors });
    },
  });

  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const isDto = typeof metadata.metatype === 'function' && ![String, Number, Boolean, Object, Array].includes(metadata.metatype as never);
    if (isDto && (metadata.type === 'body' || metadata.type === 'query')) {
      if (value === undefined || value === null || value === '') value = {};
      if (typeof value !== 'object' || Array.isArray(value)) {
        throw new DomainError('invalid_request', `the ${metadata.type} must be a JSON object`, {
          errors: [{ field: metadata.type, message: 'must be a JSON object' }],
        });
      }
    }
    if (isDto && (metadata.type === 'body' || metadata.type === 'query')) {
      // Unsafe text (U+0000, lone surrogates) cannot be stored: rejected here, before anything runs.
      const unsafe = findUnsafeText(value);
      if (unsafe) {
        throw new DomainError('invalid_request', `${unsafe.field} ${unsafe.problem}`, { errors: [{ field: unsafe.field, message: unsafe.problem }] });
      }
    }
    return this.inner.transform(value, metadata);
  }
}

