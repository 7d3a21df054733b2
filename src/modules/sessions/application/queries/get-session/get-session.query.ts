import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SessionProps } from '../../../domain/session.aggregate';

export class GetSessionQuery extends Query<Readonly<SessionProps>> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
  ) {
    super();
  }
}
