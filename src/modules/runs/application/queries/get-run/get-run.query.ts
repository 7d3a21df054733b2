import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { RunProps } from '../../../domain/run.aggregate';

export class GetRunQuery extends Query<Readonly<RunProps>> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
  ) {
    super();
  }
}
