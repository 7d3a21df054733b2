import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { canSee } from '../../../../../common/auth/principal';
import { DomainError } from '../../../../../common/errors/domain-error';
import { RunRepository } from '../../../domain/run.repository';
import { GetInputReceiptQuery } from './get-input-receipt.query';

@QueryHandler(GetInputReceiptQuery)
export class GetInputReceiptHandler implements IQueryHandler<GetInputReceiptQuery> {
  constructor(private readonly runs: RunRepository) {}

  async execute({ principal, inputId }: GetInputReceiptQuery) {
    const r = await this.runs.findReceipt(inputId);
    // Someone else's input answers exactly like a missing id.
    if (!r || !canSee(principal, { tenantId: r.tenantId, subjectId: r.subjectId })) {
      throw new DomainError('input_not_found', 'input not found', { input_id: inputId });
    }
    return r;
  }
}
