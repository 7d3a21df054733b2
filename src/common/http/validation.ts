import { ArgumentMetadata, Injectable, PipeTransform, ValidationError, ValidationPipe } from '@nestjs/common';
import { DomainError, FieldError } from '../errors/domain-error';
import { findNul } from '../text/nul';

function flatten(errors: ValidationError[], parent = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const field = parent ? `${parent}.${e.property}` : e.property;
    if (e.constraints) {
      for (const [rule, message] of Object.entries(e.constraints)) {
        out.push({ field, message: rule === 'whitelistValidation' ? `${field} is not allowed (unknown or server-owned field)` : message });
      }
    }
    if (e.children?.length) out.push(...flatten(e.children, field));
  }
  return out;
}

/**
 * Validates DTOs with class-validator. Unknown and server-owned fields are rejected (400
 * `invalid_request`, details.errors = [{field, message}]), as is a body that is not an object.
 */
@Injectable()
export class ContractValidationPipe implements PipeTransform {
  private readonly inner = new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => {
      const fieldErrors = flatten(errors);
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
      const field = findNul(value);
      if (field) {
        throw new DomainError('invalid_request', `${field} contains a NUL character (U+0000), which is not allowed`, {
          errors: [{ field, message: 'must not contain U+0000' }],
        });
      }
    }
    return this.inner.transform(value, metadata);
  }
}
