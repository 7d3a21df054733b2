import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { DomainError } from '../../../../../common/errors/domain-error';
import { AuditRetention } from '../../../domain/audit-retention';
import { SetLegalHoldCommand } from './set-legal-hold.command';

@CommandHandler(SetLegalHoldCommand)
export class SetLegalHoldHandler implements ICommandHandler<SetLegalHoldCommand> {
  constructor(private readonly retention: AuditRetention) {}

  async execute({ principal, enabled }: SetLegalHoldCommand) {
    if (principal.role !== 'admin') throw new DomainError('forbidden', 'the audit trail needs an admin API key');
    return this.retention.setLegalHold(principal.tenantId, enabled, principal.subjectId);
  }
}
