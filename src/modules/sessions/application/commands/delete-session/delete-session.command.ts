import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';

export class DeleteSessionCommand extends Command<void> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
  ) {
    super();
  }
}
