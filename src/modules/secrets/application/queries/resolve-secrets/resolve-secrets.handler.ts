import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { isSecretName } from '../../../domain/secret';
import { SecretCipher } from '../../../domain/secret-cipher';
import { SecretRepository } from '../../../domain/secret.repository';
import { ResolveSecretsQuery } from './resolve-secrets.query';

@QueryHandler(ResolveSecretsQuery)
export class ResolveSecretsHandler implements IQueryHandler<ResolveSecretsQuery> {
  constructor(
    private readonly repo: SecretRepository,
    private readonly cipher: SecretCipher,
  ) {}

  async execute(q: ResolveSecretsQuery): Promise<Map<string, string>> {
    const names = [...new Set(q.names)].filter(isSecretName);
    const values = new Map<string, string>();
    for (const s of await this.repo.sealed(q.tenantId, names)) {
      // Throws if a ciphertext does not open (another SECRETS_KEY, a row moved): an operator's error, not a missing secret.
      values.set(s.name, this.cipher.open(q.tenantId, s.name, s.version, s.ciphertext));
    }
    return values;
  }
}
