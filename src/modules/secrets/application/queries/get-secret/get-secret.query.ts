import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { SecretMetadata } from '../../../domain/secret';

/** A secret's name and version (never its value). */
export class GetSecretQuery extends Query<SecretMetadata> {
  constructor(
    readonly principal: Principal,
    readonly name: string,
  ) {
    super();
  }
}
