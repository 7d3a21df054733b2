import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SessionProps } from '../../../domain/session.aggregate';

export class ArchiveSessionCommand extends Command<Readonly<SessionProps>> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly expectedRevision?: number,
  ) {
    super();
  }
}
