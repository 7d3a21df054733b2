import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';

/** The endpoint and its deliveries (pending ones included) go. */
export class DeleteWebhookCommand extends Command<void> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
  ) {
    super();
  }
}
