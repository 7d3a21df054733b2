import { Query } from '@nestjs/cqrs';

/**
 * Whether a consumer of the integration-event outbox (an enabled webhook endpoint of the tenant,
 * answered by the webhooks module) subscribes to `type` now. Here, beside the outbox, so that a
 * producer asks it without importing its consumer (audit -> webhooks -> audit was a loop). For a producer that writes
 * many events nobody may want (`audit.recorded`: one per audit record) and skips them when so;
 * asked by the service itself, not on a caller's behalf.
 */
export class HasSubscribersQuery extends Query<boolean> {
  constructor(
    readonly tenantId: string,
    readonly type: string,
  ) {
    super();
  }
}
