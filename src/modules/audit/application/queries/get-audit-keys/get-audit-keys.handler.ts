import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { DomainError } from '../../../../../common/errors/domain-error';
import { AuditSigner } from '../../../domain/audit-checkpoint';
import { AuditReader } from '../../../domain/audit-reader';
import { AuditKeys, GetAuditKeysQuery } from './get-audit-keys.query';

@QueryHandler(GetAuditKeysQuery)
export class GetAuditKeysHandler implements IQueryHandler<GetAuditKeysQuery> {
  constructor(
    private readonly reader: AuditReader,
    private readonly signer: AuditSigner,
  ) {}

  async execute({ principal }: GetAuditKeysQuery): Promise<AuditKeys> {
    if (principal.role !== 'admin') throw new DomainError('forbidden', 'the audit trail needs an admin API key');
    const keys = await this.reader.publicKeys();
    // Listed at start-up; until that write lands, this node's key is still shown.
    if (!keys.some((k) => k.keyId === this.signer.keyId)) keys.push({ keyId: this.signer.keyId, publicKeyPem: this.signer.publicKeyPem, createdAt: new Date() });
    return { currentKeyId: this.signer.keyId, keys };
  }
}
