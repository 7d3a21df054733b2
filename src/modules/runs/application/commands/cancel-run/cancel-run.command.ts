import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { RunProps } from '../../../domain/run.aggregate';

export class CancelRunCommand extends Command<{ run: Readonly<RunProps>; alreadyCancelled: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
  ) {
    super();
  }
}
