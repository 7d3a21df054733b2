import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { SortOrder } from '../../../../../common/http/pagination';
import type { SecretMetadata } from '../../../domain/secret';
import type { Page } from '../../../domain/secret.repository';

/** The caller's tenant's secrets (names and versions, never values), ordered by name; `after` is a name. */
export class ListSecretsQuery extends Query<Page<SecretMetadata>> {
  constructor(
    readonly principal: Principal,
    readonly page: { after?: string; limit: number; order: SortOrder },
  ) {
    super();
  }
}
