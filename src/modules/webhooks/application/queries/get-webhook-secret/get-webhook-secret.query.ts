import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';

/** The endpoint's signing secret, if `secretVersion` is still its current one; else why it is withheld. */
export type WebhookSecretLookup = { secret: string } | { withheld: 'rotated' | 'deleted' };

/**
 * For the replay of a create or rotate_secret answer only (IdempotentExecutor's `rehydrate`): the
 * secret that answer showed, opened from its sealed copy, never another one.
 */
export class GetWebhookSecretQuery extends Query<WebhookSecretLookup> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
    readonly secretVersion: number,
  ) {
    super();
  }
}
