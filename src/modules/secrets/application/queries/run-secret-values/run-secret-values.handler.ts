import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import type { ResolvedSecret } from '../../../../../common/secrets/secret-scrubber';
import { SecretCipher } from '../../../domain/secret-cipher';
import { SecretRepository } from '../../../domain/secret.repository';
import { RunSecretValuesQuery } from './run-secret-values.query';

@QueryHandler(RunSecretValuesQuery)
export class RunSecretValuesHandler implements IQueryHandler<RunSecretValuesQuery> {
  constructor(
    private readonly repo: SecretRepository,
    private readonly cipher: SecretCipher,
  ) {}

  async execute({ tenantId, runIds, sessionIds }: RunSecretValuesQuery): Promise<ResolvedSecret[]> {
    const uses = await this.repo.usesOf(tenantId, { runIds: [...new Set(runIds)], sessionIds: [...new Set(sessionIds)] });
    return uses.map((u) => ({ name: u.name, value: this.cipher.openUse(tenantId, u.runId, u.name, u.ciphertext) }));
  }
}
