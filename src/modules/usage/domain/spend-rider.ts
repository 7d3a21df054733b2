import type { GuardedRider } from '../../../common/database/statement';
import { ModelCallSpend } from './spend';

/**
 * Port (infrastructure level, like the outbox's `IntegrationEventOutbox`) for the runs module: the
 * spend of the model calls a run step committed, written by the step's own guarded statement. So a
 * call's cost is recorded exactly when its turn commits and never without it (no crash gap, no
 * statement of its own per turn); `model_spend`'s SQL stays in this module. A repeated write of
 * the same call (run_id, message_id) changes nothing.
 */
export abstract class SpendRider {
  abstract afterGuard(calls: readonly Omit<ModelCallSpend, 'occurredAt'>[]): GuardedRider;
}
