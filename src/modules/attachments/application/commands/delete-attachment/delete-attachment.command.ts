import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';

export class DeleteAttachmentCommand extends Command<void> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
  ) {
    super();
  }
}
