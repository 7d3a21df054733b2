import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { SecretMetadata } from '../../../domain/secret';
import { SecretRepository } from '../../../domain/secret.repository';
import { secretNotFound } from '../../secret-not-found';
import { GetSecretQuery } from './get-secret.query';

@QueryHandler(GetSecretQuery)
export class GetSecretHandler implements IQueryHandler<GetSecretQuery> {
  constructor(private readonly repo: SecretRepository) {}

  async execute(q: GetSecretQuery): Promise<SecretMetadata> {
    const s = await this.repo.find(q.principal.tenantId, q.name);
    if (!s) throw secretNotFound(q.name);
    return s;
  }
}
