import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { invalidCursor } from '../../../../../common/http/pagination';
import { isSecretName, SecretMetadata } from '../../../domain/secret';
import { Page, SecretRepository } from '../../../domain/secret.repository';
import { ListSecretsQuery } from './list-secrets.query';

@QueryHandler(ListSecretsQuery)
export class ListSecretsHandler implements IQueryHandler<ListSecretsQuery> {
  constructor(private readonly repo: SecretRepository) {}

  execute(q: ListSecretsQuery): Promise<Page<SecretMetadata>> {
    // A cursor is a position among names: any well-formed name is one (a deleted one included).
    if (q.page.after !== undefined && !isSecretName(q.page.after)) throw invalidCursor(q.page.after);
    return this.repo.list(q.principal.tenantId, q.page);
  }
}
