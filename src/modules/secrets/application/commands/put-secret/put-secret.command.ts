import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { SecretMetadata } from '../../../domain/secret';

/** Sets the caller's tenant's secret `name` to `value`: version 1, or the next version of a name written before. */
export class PutSecretCommand extends Command<SecretMetadata> {
  constructor(
    readonly principal: Principal,
    readonly name: string,
    readonly value: string,
  ) {
    super();
  }

  /** Never the value, should the command end up serialised (a log line, an error report). */
  toJSON(): Record<string, unknown> {
    return { name: this.name, tenant_id: this.principal.tenantId, value: '[withheld]' };
  }
}
