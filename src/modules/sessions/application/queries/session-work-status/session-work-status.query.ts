import { Query } from '@nestjs/cqrs';
import { WorkStatus } from '../../../domain/work-status';

/** The work status of sessions the caller was already checked to see (CONTRACT section 7). */
export class SessionWorkStatusQuery extends Query<Map<string, WorkStatus>> {
  constructor(readonly sessionIds: readonly string[]) {
    super();
  }
}
